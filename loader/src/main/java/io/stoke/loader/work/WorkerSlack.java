package io.stoke.loader.work;

import io.stoke.ring.SlotRing;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Whether the workers leave CPU to spare, for the restart cache's fillers ({@link
 * io.stoke.loader.cache.RestartCache#pace}): true while at least one worker waits for a free slot
 * (the ring is full: the consumer is the bottleneck) or for the next epoch's order, once a worker
 * has drawn past the last ticket, and once the pipeline stopped. While it is false every worker
 * decodes, and a filler would take its core from one of them.
 *
 * <p>Counted only where a worker would wait anyway: a slot is first tried without waiting, so a
 * worker that finds one free touches no counter; no allocation.
 */
final class WorkerSlack implements BooleanSupplier {
    /** The fewest of the consumer's takes a verdict of {@link #consumerKeepsUp} is drawn from. */
    static final int JUDGED_TAKES = 2;
    /**
     * A consumer that waited less than this a take, on average, found its batches ready: a poll and
     * its bookkeeping take microseconds, while a loader-bound consumer waits out a batch's decoding.
     */
    static final long READY_WAIT_NANOS = 500_000;

    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicInteger finished = new AtomicInteger();
    // The consumer's takes and waits when the last verdict was drawn, and the verdict. Every worker
    // reads and writes them without a lock (volatile: each sees the last write whole): two that
    // judge at once write marks and verdicts of nearly the same takes. A verdict only lets a worker
    // copy while a batch is ready, and the next takes judge again.
    private volatile long takenMark = Long.MIN_VALUE;
    private volatile long waitedMark;
    private volatile boolean keepsUp;

    private final RunState state;

    WorkerSlack(RunState state) {
        this.state = state;
    }

    /** A worker starts waiting for a free slot or an epoch's order. */
    void waitStarts() {
        waiting.incrementAndGet();
    }

    /** ... and stops. */
    void waitEnds() {
        waiting.decrementAndGet();
    }

    /**
     * Whether a worker may copy the original it missed ({@code io.stoke.loader.cache.MissCopy}),
     * which costs it about a decode more: the loader has slack now; or the consumer has at least
     * half of {@code ring}'s slots ready and waiting; or one is ready and the consumer found its
     * last batches ready ({@link #consumerKeepsUp}: a model's step, not the loader, sets the pace).
     * So a slower sample delays no batch the consumer waits for. A loader-bound consumer takes each
     * batch as it is published, leaves none waiting and waits for the next; copies would slow
     * production, the ready slots fall below half, the consumer waits, and the workers stop copying.
     *
     * @param taken  the batches the consumer has taken
     * @param waited how long it has waited for them, summed, in nanoseconds (0 from a consumer that
     *     does not say: never judged to keep up)
     */
    BooleanSupplier forWorkers(SlotRing ring, LongSupplier taken, LongSupplier waited) {
        int half = Math.max(1, (ring.geometry().slotCount() + 1) / 2);
        return () -> {
            if (getAsBoolean()) {
                return true;
            }
            int ready = ring.readySlots();
            return ready >= half || (ready >= 1 && consumerKeepsUp(taken.getAsLong(), waited.getAsLong()));
        };
    }

    /**
     * Whether the consumer took its batches since the last verdict, at least {@link #JUDGED_TAKES}
     * of them, with less than {@link #READY_WAIT_NANOS} of waiting each on average; until that many
     * more are taken, the last verdict (none at first: false).
     */
    boolean consumerKeepsUp(long taken, long waited) {
        long mark = takenMark;
        if (mark == Long.MIN_VALUE) {
            waitedMark = waited;
            takenMark = taken;
            return false;
        }
        if (taken - mark >= JUDGED_TAKES) {
            keepsUp = waited > 0 && waited - waitedMark < (taken - mark) * READY_WAIT_NANOS;
            waitedMark = waited;
            takenMark = taken;
        }
        return keepsUp;
    }

    /** A worker left its loop: no ticket left, or stopped. */
    void workerFinished() {
        finished.incrementAndGet();
    }

    /** Whether the loader has slack now. */
    @Override
    public boolean getAsBoolean() {
        return waiting.get() > 0 || finished.get() > 0 || !state.running;
    }
}
