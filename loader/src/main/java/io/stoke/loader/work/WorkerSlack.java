package io.stoke.loader.work;

import io.stoke.ring.SlotRing;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

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
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicInteger finished = new AtomicInteger();

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
     * which costs it about a decode more: the loader has slack now, or the consumer has at least
     * half of {@code ring}'s slots ready and waiting, so a slower sample delays no batch it waits
     * for. A loader-bound consumer takes each batch as it is published and leaves none waiting;
     * copies then slow production, the ready slots fall below half, and the workers stop copying.
     */
    BooleanSupplier forWorkers(SlotRing ring) {
        int half = Math.max(1, (ring.geometry().slotCount() + 1) / 2);
        return () -> getAsBoolean() || ring.readySlots() >= half;
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
