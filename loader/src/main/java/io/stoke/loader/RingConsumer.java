package io.stoke.loader;

import io.stoke.ring.ProducerGoneException;
import io.stoke.ring.RingFormatException;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.ShmRing;
import io.stoke.ring.SlotRing;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

/**
 * The consumer of a ring that another process produces ({@code stoke serve --ring PATH}): the same
 * {@link Batch} API as an in-process {@link Loader}, read in place in the shared slots.
 *
 * <pre>{@code
 * try (RingConsumer ring = RingConsumer.attach(Path.of("/dev/shm/train"))) {
 *     for (Batch batch : ring) {
 *         try (batch) {
 *             consume(batch.pixels(), batch.labels());
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>Attaching validates the file's header before anything else is read ({@link RingFormatException}
 * for a file that is not a valid ring). {@link #next()} throws {@link ProducerGoneException} within
 * about {@link #PRODUCER_CHECK_MILLIS} ms plus the idle strategy's longest pause when the producer's
 * process is gone or failed, instead of waiting forever. Batches still open when the consumer closes
 * (or its process dies) are delivered again to the next consumer that attaches. {@link #next()} is
 * for one thread; a batch may be closed on any thread.
 */
public final class RingConsumer implements BatchSource<Batch>, Iterable<Batch>, AutoCloseable {
    /** How often a waiting {@link #next()} writes the consumer heartbeat and checks the producer. */
    public static final int PRODUCER_CHECK_MILLIS = 10;

    private final ShmRing shm;
    private final SlotRing ring;
    private final IdleStrategy idle;
    private final Set<Batch> open = ConcurrentHashMap.newKeySet();
    /** Orders releases against {@link #close()}: no release may write the free queue once we detached. */
    private final Object releaseLock = new Object();

    private volatile boolean closed;

    private RingConsumer(ShmRing shm, IdleStrategy idle) {
        this.shm = shm;
        this.ring = shm.slots();
        this.idle = idle;
    }

    /** Attaches to the ring at {@code path}, waiting up to 10 s for a previous consumer's seat to be reclaimed. */
    public static RingConsumer attach(Path path) {
        return attach(
                path,
                Duration.ofSeconds(10),
                new BackoffIdleStrategy(100, 10, TimeUnit.MICROSECONDS.toNanos(1), TimeUnit.MICROSECONDS.toNanos(200)));
    }

    /**
     * Attaches to the ring at {@code path}.
     *
     * @param timeout how long to wait for the producer to reclaim the seat of a consumer that left
     * @param idle    how {@link #next()} waits (a busy-spin strategy gives the lowest hand-off latency)
     * @throws RingFormatException   when the file is not a valid ring
     * @throws ProducerGoneException when its producer is not running
     * @throws IllegalStateException when another live consumer is attached
     */
    public static RingConsumer attach(Path path, Duration timeout, IdleStrategy idle) {
        return new RingConsumer(ShmRing.attach(path, timeout), idle);
    }

    /**
     * The next batch, waiting for it; {@code null} after the producer's last batch.
     *
     * @throws SampleException when the batch held a sample that failed under the producer's
     *     {@code --on-error fail}; its slot is already returned
     * @throws ProducerGoneException when the producer's process is gone, failed, or stopped its heartbeat
     */
    public synchronized Batch next() {
        if (closed) {
            throw new IllegalStateException("consumer is closed");
        }
        long start = System.nanoTime();
        long lastCheck = start;
        idle.reset();
        while (true) {
            int slot = ring.pollReady();
            if (slot < 0 && shm.endOfStream()) {
                // The last batch is published before the state says so: one more look settles it.
                slot = ring.pollReady();
                if (slot < 0) {
                    return null;
                }
            }
            if (slot >= 0) {
                return hand(slot, System.nanoTime() - start);
            }
            long now = System.nanoTime();
            if (now - lastCheck >= PRODUCER_CHECK_MILLIS * 1_000_000L) {
                lastCheck = now;
                shm.consumerHeartbeat(false);
                shm.checkProducer();
            }
            idle.idle();
        }
    }

    private Batch hand(int slot, long waitNanos) {
        shm.consumerTook(waitNanos);
        Batch batch = new Batch(ring.geometry(), slot, ring.slot(slot), null, waitNanos, this::release);
        batch.closeAndThrowIfFailed();
        open.add(batch);
        return batch;
    }

    private void release(int slot) {
        open.removeIf(b -> b.slot() == slot && b.isClosed());
        synchronized (releaseLock) {
            // After close() the producer owns the queues again (it reclaims our slots).
            if (!closed) {
                ring.release(slot);
            }
        }
    }

    /** Iterates batches until the producer's last one. Each batch should be closed by the caller. */
    @Override
    public Iterator<Batch> iterator() {
        return new BatchIterator(this::next);
    }

    public RingGeometry geometry() {
        return ring.geometry();
    }

    public Path path() {
        return shm.path();
    }

    /**
     * Detaches: batches still open are invalidated (their segments throw from now on) and,
     * never released, are delivered again to the next consumer; the file is unmapped. Idempotent.
     */
    @Override
    public void close() {
        synchronized (releaseLock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        synchronized (this) {
            for (Batch b : open) {
                b.abandon();
            }
            open.clear();
            shm.close();
        }
    }
}
