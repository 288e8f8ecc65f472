package io.stoke.loader.autoworkers;

import io.stoke.ring.SlotRing;

/**
 * What {@link AutoWorkers} measures and sets on a running pipeline: its ring and consumer, each
 * worker thread's counters, and how many workers take samples. The loader's worker pipeline
 * implements it; so could another producer of a ring that wants its workers chosen live.
 * Workers are numbered {@code [0, threads)}: the first set, then the yielding set where there is one.
 */
public interface WorkerPool {
    SlotRing ring();

    /** Whether batches are still to come: false once the pipeline stopped, failed or published its last. */
    boolean isRunningOrPublishing();

    /** Batches the consumer has taken so far. */
    long consumerTaken();

    /** Nanoseconds the consumer waited for batches, summed (its stall). */
    long consumerWaitNanos();

    /**
     * Whether {@link #consumerWaitNanos()} is measured in this process; otherwise it is what a
     * consumer in another process adds to the ring's header, which one may never do.
     */
    boolean consumerInProcess();

    /** Worker {@code worker}'s thread. */
    Thread thread(int worker);

    /** Worker {@code worker}'s Linux thread id, 0 where unknown (CPU time then comes from the JVM). */
    long threadId(int worker);

    /** Samples worker {@code worker} has decoded. */
    long samples(int worker);

    /** Nanoseconds worker {@code worker} has waited for a free slot. */
    long slotWaitNanos(int worker);

    /** Lets the first {@code workers} of one set take samples: the yielding set's when {@code yielding}. */
    void activate(int workers, boolean yielding);
}
