package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * A flyweight over one slot's 64-byte header ({@link RingLayout}'s {@code SLOT_*_OFFSET}s): the
 * only way code outside this module reads or writes a slot's batch description. Wrap it over a
 * slot's memory (as {@link SlotRing#slot(int)} returns it) and reuse it; it allocates nothing.
 *
 * <p>Memory ordering: the descriptive fields (sequence, epoch, counts, flags...) are plain. They
 * are written only by the side that owns the slot and handed over with the slot itself, through
 * the ready or free queue, whose commit is a release and whose read is an acquire (Agrona's
 * {@code OneToOneRingBuffer}; {@code stoke_queue_offer}/{@code stoke_queue_poll} in C). Whatever
 * the owner wrote before the hand-off is therefore visible to the next owner after it. The state
 * word is the exception: it is read by a side that does not own the slot (the producer reclaiming
 * a dead consumer's slots, status lines), so it is written and read with volatile semantics.
 */
public final class SlotHeader {
    private static final VarHandle INT = JAVA_INT.varHandle();

    private MemorySegment slot;

    /** A flyweight pointing nowhere until {@link #wrap}; one per owner, re-pointed for every slot. */
    public SlotHeader() {}

    /** Points this flyweight at {@code slot} (at least {@link RingLayout#SLOT_HEADER_LENGTH} bytes). */
    public SlotHeader wrap(MemorySegment slot) {
        if (slot.byteSize() < SLOT_HEADER_LENGTH) {
            throw new IllegalArgumentException(
                    "a slot header needs " + SLOT_HEADER_LENGTH + " bytes, got " + slot.byteSize());
        }
        this.slot = slot;
        return this;
    }

    /** The batch's number since the producer started (its order across epochs). */
    public long sequence() {
        return slot.get(JAVA_LONG, SLOT_SEQUENCE_OFFSET);
    }

    public SlotHeader sequence(long value) {
        slot.set(JAVA_LONG, SLOT_SEQUENCE_OFFSET, value);
        return this;
    }

    public long epoch() {
        return slot.get(JAVA_LONG, SLOT_EPOCH_OFFSET);
    }

    public SlotHeader epoch(long value) {
        slot.set(JAVA_LONG, SLOT_EPOCH_OFFSET, value);
        return this;
    }

    /** The batch's number within its epoch. */
    public long batchIndex() {
        return slot.get(JAVA_LONG, SLOT_BATCH_INDEX_OFFSET);
    }

    public SlotHeader batchIndex(long value) {
        slot.set(JAVA_LONG, SLOT_BATCH_INDEX_OFFSET, value);
        return this;
    }

    /** Valid samples in the slot (at most the batch size): not trusted by readers, who range-check it. */
    public int sampleCount() {
        return slot.get(JAVA_INT, SLOT_SAMPLE_COUNT_OFFSET);
    }

    public SlotHeader sampleCount(int value) {
        slot.set(JAVA_INT, SLOT_SAMPLE_COUNT_OFFSET, value);
        return this;
    }

    /** Samples whose status is not OK. */
    public int skippedCount() {
        return slot.get(JAVA_INT, SLOT_SKIPPED_COUNT_OFFSET);
    }

    public SlotHeader skippedCount(int value) {
        slot.set(JAVA_INT, SLOT_SKIPPED_COUNT_OFFSET, value);
        return this;
    }

    public long pixelBytes() {
        return slot.get(JAVA_LONG, SLOT_PIXEL_BYTES_OFFSET);
    }

    public SlotHeader pixelBytes(long value) {
        slot.set(JAVA_LONG, SLOT_PIXEL_BYTES_OFFSET, value);
        return this;
    }

    /** Worker time spent on the batch's samples, summed. */
    public long decodeNanos() {
        return slot.get(JAVA_LONG, SLOT_DECODE_NANOS_OFFSET);
    }

    public SlotHeader decodeNanos(long value) {
        slot.set(JAVA_LONG, SLOT_DECODE_NANOS_OFFSET, value);
        return this;
    }

    /** Compressed bytes read for the batch. */
    public long sourceBytes() {
        return slot.get(JAVA_LONG, SLOT_SOURCE_BYTES_OFFSET);
    }

    public SlotHeader sourceBytes(long value) {
        slot.set(JAVA_LONG, SLOT_SOURCE_BYTES_OFFSET, value);
        return this;
    }

    /** {@link RingLayout#SLOT_FLAG_FAILED} and {@link RingLayout#SLOT_FLAG_LAST_IN_EPOCH}. */
    public int flags() {
        return slot.get(JAVA_INT, SLOT_FLAGS_OFFSET);
    }

    public SlotHeader flags(int value) {
        slot.set(JAVA_INT, SLOT_FLAGS_OFFSET, value);
        return this;
    }

    /** The flags word of a batch that {@code failed} (a sample failed under policy FAIL) and/or ends its epoch. */
    public static int flags(boolean failed, boolean lastInEpoch) {
        return (failed ? SLOT_FLAG_FAILED : 0) | (lastInEpoch ? SLOT_FLAG_LAST_IN_EPOCH : 0);
    }

    public boolean failed() {
        return (flags() & SLOT_FLAG_FAILED) != 0;
    }

    public boolean lastInEpoch() {
        return (flags() & SLOT_FLAG_LAST_IN_EPOCH) != 0;
    }

    /** Who owns the slot, one of {@code SLOT_STATE_*}: a volatile read (see the class comment). */
    public int state() {
        return (int) INT.getVolatile(slot, (long) SLOT_STATE_OFFSET);
    }

    /** A volatile write of the owner: ordered after everything the writer did to the slot before. */
    public void state(int value) {
        INT.setVolatile(slot, (long) SLOT_STATE_OFFSET, value);
    }
}
