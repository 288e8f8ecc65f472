package io.stoke.loader.work;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What each worker did, for auto-workers to measure: samples done, nanoseconds waiting for a free
 * slot, and its Linux thread id. Each worker writes only its own, a cache line apart, with lazySet:
 * the reader sums totals over a window and takes no decision from one write.
 */
final class WorkerCounters {
    private static final int STRIDE = 8;
    static final int SAMPLES = 0;
    static final int SLOT_WAIT_NANOS = 1;
    static final int TID = 2;

    private final AtomicLongArray counters;

    WorkerCounters(int workers) {
        this.counters = new AtomicLongArray(workers * STRIDE);
    }

    long get(int worker, int field) {
        return counters.get(worker * STRIDE + field);
    }

    /** Worker {@code worker}'s thread only. */
    void add(int worker, int field, long value) {
        int i = worker * STRIDE + field;
        counters.lazySet(i, counters.get(i) + value);
    }

    /** Worker {@code worker}'s thread only. */
    void set(int worker, int field, long value) {
        counters.lazySet(worker * STRIDE + field, value);
    }
}
