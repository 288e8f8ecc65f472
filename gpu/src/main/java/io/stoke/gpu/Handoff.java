package io.stoke.gpu;

import io.stoke.loader.error.NoSampleDecodedException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Where a stage's producing thread hands batches to the consumer ({@link DeviceStage},
 * {@link GpuDecodeStage}): entries in order, a batch's own exception in its place (the batch after
 * it follows), then the end. A failure of the stage itself is said after the entries queued before
 * it, which were made whole; the loader's {@link NoSampleDecodedException} is passed on as it is.
 * One producer, one consumer.
 */
final class Handoff {
    private static final Object END = new Object();

    private final String stage;
    private final BlockingQueue<Object> queue; // DeviceEntry, a RuntimeException for the consumer, or END
    private volatile RuntimeException failure;
    private volatile boolean ended;

    /** @param stage what the stage is called in messages ("GPU stage") */
    Handoff(String stage, int capacity) {
        this.stage = stage;
        this.queue = new ArrayBlockingQueue<>(capacity);
    }

    /** The next batch's entry, made whole on the stream. */
    void put(DeviceEntry entry) throws InterruptedException {
        queue.put(entry);
    }

    /** In the next batch's place: its own failure, thrown to the consumer, who goes on after it. */
    void put(RuntimeException batchFailure) throws InterruptedException {
        queue.put(batchFailure);
    }

    /** After the last batch. */
    void end() throws InterruptedException {
        queue.put(END);
    }

    /** The stage stopped on {@code e}; the first such failure is the one said. */
    void fail(RuntimeException e) {
        if (failure == null) {
            failure = e;
        }
    }

    RuntimeException failure() {
        return failure;
    }

    /** Items put and not yet taken: how far the consumer is behind. */
    int waiting() {
        return queue.size();
    }

    /**
     * The next batch, handed out as a {@link DeviceBatch} of {@code owner}'s; null after the end.
     * The exceptions are {@link #take}'s.
     */
    DeviceBatch next(DeviceBatchOwner owner, BooleanSupplier closed) {
        DeviceEntry entry = take(closed);
        if (entry == null) {
            return null;
        }
        DeviceBatch batch = new DeviceBatch(owner, entry);
        entry.handedOut = batch;
        if (closed.getAsBoolean()) {
            batch.invalidate(); // close() ran while this was taken: it may not have seen the batch
            throw new IllegalStateException(stage + " is closed");
        }
        return batch;
    }

    /**
     * The next entry, waiting while none is ready; null after the end.
     *
     * @throws IllegalStateException when {@code closed} says so, or the stage failed (the cause says how)
     * @throws RuntimeException a batch's own failure, in its place
     */
    DeviceEntry take(BooleanSupplier closed) {
        while (true) {
            if (closed.getAsBoolean()) {
                throw new IllegalStateException(stage + " is closed");
            }
            // Batches queued before a failure were made whole and are delivered first.
            Object item = queue.poll();
            if (item == null) {
                RuntimeException f = failure;
                if (f instanceof NoSampleDecodedException n) {
                    throw n; // the loader's own end, after every batch before it: not a stage failure
                }
                if (f != null) {
                    throw new IllegalStateException(stage + " failed: " + f.getMessage(), f);
                }
                if (ended) {
                    return null;
                }
                try {
                    // A bounded wait, so that a failure or close() is noticed by a waiting consumer.
                    item = queue.poll(50, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for a device batch", e);
                }
                if (item == null) {
                    continue;
                }
            }
            if (item == END) {
                ended = true;
                return null;
            }
            if (item instanceof RuntimeException e) {
                throw e;
            }
            return (DeviceEntry) item;
        }
    }
}
