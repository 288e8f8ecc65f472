package io.stoke.loader.work;

import io.stoke.loader.error.SampleError;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The state of one batch between taking its slot and being published: which slot, how many
 * samples are still being decoded, and what went wrong. Entries are reused; {@link #sequence}
 * is written last when an entry is taken over, so a worker that reads the batch number it expects
 * sees every other field of that batch.
 */
final class InFlightBatch {
    volatile long sequence = -1;
    int slot;
    long epoch;
    int batchIndex;
    int size;
    boolean lastInEpoch;
    final AtomicInteger remaining = new AtomicInteger();
    final AtomicLong decodeNanos = new AtomicLong();
    final AtomicLong sourceBytes = new AtomicLong();
    private List<SampleError> errors;

    /**
     * The entries for a ring of {@code slots}: one more than slots, so that batch {@code g + length}
     * cannot take a slot before batch {@code g} is published and its entry free.
     */
    static InFlightBatch[] table(int slots) {
        InFlightBatch[] table = new InFlightBatch[slots + 1];
        for (int i = 0; i < table.length; i++) {
            table[i] = new InFlightBatch();
        }
        return table;
    }

    /** Called by the worker that took the slot, before {@link #sequence} is published. */
    void begin(int slot, long epoch, int batchIndex, int size, boolean lastInEpoch) {
        this.slot = slot;
        this.epoch = epoch;
        this.batchIndex = batchIndex;
        this.size = size;
        this.lastInEpoch = lastInEpoch;
        this.remaining.set(size);
        this.decodeNanos.set(0);
        this.sourceBytes.set(0);
        synchronized (this) {
            this.errors = null;
        }
    }

    synchronized void addError(SampleError error) {
        if (errors == null) {
            errors = new ArrayList<>(4);
        }
        errors.add(error);
    }

    /** The errors, sorted by position, or an empty list. */
    synchronized List<SampleError> errors() {
        if (errors == null) {
            return List.of();
        }
        errors.sort((a, b) -> Integer.compare(a.position(), b.position()));
        return List.copyOf(errors);
    }
}
