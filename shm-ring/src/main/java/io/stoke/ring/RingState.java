package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * The ring header's live words (stream state, liveness, counters): a flyweight over the first page
 * of a ring, so that nothing outside this module names their offsets.
 *
 * <p>Memory ordering: each word is written by one side and read by the other, in another thread
 * or another process, so every write is a release and every read an acquire. The one hand-off
 * that carries more than its own value is the stream state: the producer publishes its last batch
 * on the ready queue and then writes END_OF_STREAM (or PRODUCER_FAILED after a batch that
 * explains the failure) with a release; a consumer that reads that state with an acquire and then
 * polls the ready queue once more is guaranteed to find every batch published before it. Without
 * the release/acquire pair the Java memory model would allow the consumer to see the end of the
 * stream and an empty queue (x86 happens not to reorder these stores; weaker hardware may).
 */
public final class RingState {
    private static final VarHandle INT = JAVA_INT.varHandle();
    private static final VarHandle LONG = JAVA_LONG.varHandle();

    private final MemorySegment header;

    /** Over {@code ring}, the ring's memory from its first byte. */
    public RingState(MemorySegment ring) {
        if (ring.byteSize() < HEADER_LENGTH) {
            throw new IllegalArgumentException(
                    "a ring header needs " + HEADER_LENGTH + " bytes, got " + ring.byteSize());
        }
        this.header = ring.asSlice(0, HEADER_LENGTH);
    }

    // ---- the stream: written by the producer, read by consumers ----

    /** {@link RingLayout#STATE_RUNNING}, {@link RingLayout#STATE_END_OF_STREAM} or {@link RingLayout#STATE_PRODUCER_FAILED}. */
    public int stream() {
        return (int) INT.getAcquire(header, (long) STATE_OFFSET);
    }

    /** Whether the producer has published its last batch: an acquire, so a poll after it sees that batch. */
    public boolean endOfStream() {
        return stream() == STATE_END_OF_STREAM;
    }

    public boolean producerFailed() {
        return stream() == STATE_PRODUCER_FAILED;
    }

    /** Producer: every batch is published. A release: ordered after the last publish. */
    public void endStream() {
        INT.setRelease(header, (long) STATE_OFFSET, STATE_END_OF_STREAM);
    }

    /** Producer: it failed. A release: ordered after any batch published to explain the failure. */
    public void failProducer() {
        INT.setRelease(header, (long) STATE_OFFSET, STATE_PRODUCER_FAILED);
    }

    /** Batches the producer has published (for status lines and consumer lag). */
    public long published() {
        return (long) LONG.getAcquire(header, (long) PUBLISHED_OFFSET);
    }

    public void published(long count) {
        LONG.setRelease(header, (long) PUBLISHED_OFFSET, count);
    }

    /** Batches put back on the ready queue after a consumer left without releasing them. */
    public long redelivered() {
        return (long) LONG.getAcquire(header, (long) REDELIVERED_OFFSET);
    }

    /** Producer only (its monitor, with the queues locked): counts {@code batches} more re-deliveries. */
    public void addRedelivered(long batches) {
        LONG.setRelease(header, (long) REDELIVERED_OFFSET, redelivered() + batches);
    }

    // ---- liveness ----

    public long producerPid() {
        return (long) LONG.getAcquire(header, (long) PRODUCER_PID_OFFSET);
    }

    public void producerPid(long pid) {
        LONG.setRelease(header, (long) PRODUCER_PID_OFFSET, pid);
    }

    /** Milliseconds since the epoch when the producer last said it was alive. */
    public long producerHeartbeat() {
        return (long) LONG.getAcquire(header, (long) PRODUCER_HEARTBEAT_OFFSET);
    }

    public void producerHeartbeat(long millis) {
        LONG.setRelease(header, (long) PRODUCER_HEARTBEAT_OFFSET, millis);
    }

    /** 0: no consumer; a pid: that consumer is attached; -pid: it detached and is being reclaimed. */
    public long consumerPid() {
        return (long) LONG.getAcquire(header, (long) CONSUMER_PID_OFFSET);
    }

    /**
     * Moves the consumer seat from {@code expected} to {@code value} atomically (a full fence):
     * a consumer takes the seat 0 -> pid, the producer frees it -> 0 after reclaiming, a consumer
     * leaves pid -> -pid after its last release.
     */
    public boolean compareAndSetConsumerPid(long expected, long value) {
        return LONG.compareAndSet(header, (long) CONSUMER_PID_OFFSET, expected, value);
    }

    public long consumerHeartbeat() {
        return (long) LONG.getAcquire(header, (long) CONSUMER_HEARTBEAT_OFFSET);
    }

    public void consumerHeartbeat(long millis) {
        LONG.setRelease(header, (long) CONSUMER_HEARTBEAT_OFFSET, millis);
    }

    /** Batches taken by consumers (re-deliveries count again). */
    public long consumed() {
        return (long) LONG.getAcquire(header, (long) CONSUMED_OFFSET);
    }

    /** Consumer: one more batch taken. Atomic: a consumer without CAS (Python) only ever adds here as well. */
    public void addConsumed() {
        LONG.getAndAdd(header, (long) CONSUMED_OFFSET, 1L);
    }

    /** Nanoseconds consumers waited for a batch, summed (the producer's tuner reads it). */
    public long consumerWaitNanos() {
        return (long) LONG.getAcquire(header, (long) CONSUMER_WAIT_NANOS_OFFSET);
    }

    /** Consumer: it waited {@code nanos} for the batch it just took. Opaque-ordered, a statistic only. */
    public void addConsumerWait(long nanos) {
        LONG.getAndAdd(header, (long) CONSUMER_WAIT_NANOS_OFFSET, nanos);
    }
}
