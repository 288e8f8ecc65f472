package io.stoke.ring;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;

/**
 * A flyweight over one slot's body: the per-sample arrays (labels int32, dataset indices int64,
 * status int32) and the pixels that follow the {@link SlotHeader} ({@link RingLayout}'s drawing of
 * one slot). The only place outside {@link RingGeometry} that knows where a body's elements lie:
 * loaders, consumers and device stages name positions, never offsets. Wrap it over a slot's
 * memory (as {@link SlotRing#slot(int)} returns it, or a view of it in another arena) and reuse
 * it; {@link #wrap} allocates the pixel view once, the element accessors allocate nothing.
 *
 * <p>Memory ordering: every access is plain. A body is written only by the side that owns the
 * slot (workers of the producer, each to its own positions) and handed over with the slot through
 * the ready or free queue, whose commit is a release and whose read an acquire, as for
 * {@link SlotHeader}'s descriptive fields. Positions are not range-checked against the batch
 * size (the hot path writes one per sample): owners pass positions below
 * {@link RingGeometry#samplesPerSlot()}; the segment's own bounds still stop an access past the slot.
 */
public final class SlotBody {
    private final RingGeometry geometry;
    private final long labelsOffset;
    private final long indicesOffset;
    private final long statusOffset;
    private final long pixelsOffset;
    private final long sampleBytes;
    private final long pixelsLength;

    private MemorySegment slot;
    private MemorySegment pixels;

    /** A flyweight for slots of {@code geometry}, pointing nowhere until {@link #wrap}. */
    public SlotBody(RingGeometry geometry) {
        this.geometry = geometry;
        this.labelsOffset = geometry.slotLabelsOffset();
        this.indicesOffset = geometry.slotIndicesOffset();
        this.statusOffset = geometry.slotStatusOffset();
        this.pixelsOffset = geometry.slotPixelsOffset();
        this.sampleBytes = geometry.sampleBytes();
        this.pixelsLength = sampleBytes * geometry.samplesPerSlot();
    }

    /** Points this flyweight at {@code slot}: one whole slot, {@link RingGeometry#slotStride()} bytes or more. */
    public SlotBody wrap(MemorySegment slot) {
        if (slot.byteSize() < pixelsOffset + pixelsLength) {
            throw new IllegalArgumentException("a slot of " + geometry + " needs " + (pixelsOffset + pixelsLength)
                    + " bytes, got " + slot.byteSize());
        }
        this.slot = slot;
        this.pixels = slot.asSlice(pixelsOffset, pixelsLength);
        return this;
    }

    public int label(int position) {
        return slot.get(JAVA_INT, labelsOffset + 4L * position);
    }

    public SlotBody putLabel(int position, int label) {
        slot.set(JAVA_INT, labelsOffset + 4L * position, label);
        return this;
    }

    /** The dataset index of the sample at {@code position}. */
    public long index(int position) {
        return slot.get(JAVA_LONG, indicesOffset + 8L * position);
    }

    public SlotBody putIndex(int position, long index) {
        slot.set(JAVA_LONG, indicesOffset + 8L * position, index);
        return this;
    }

    /** The sample's status code (the loader's {@code SampleStatus}; the ring carries it without meaning). */
    public int status(int position) {
        return slot.get(JAVA_INT, statusOffset + 4L * position);
    }

    public SlotBody putStatus(int position, int code) {
        slot.set(JAVA_INT, statusOffset + 4L * position, code);
        return this;
    }

    /** Every sample's pixels, the whole batch size end to end; a worker writes at {@link #pixelOffset}. */
    public MemorySegment pixels() {
        return pixels;
    }

    /** Where the sample at {@code position} starts in {@link #pixels()}. */
    public long pixelOffset(int position) {
        return position * sampleBytes;
    }

    /** The pixels of the first {@code count} samples (a view: allocates, so not for the hot path). */
    public MemorySegment pixels(int count) {
        return pixels.asSlice(0, count * sampleBytes);
    }

    /** One sample's pixels (a view: allocates). */
    public MemorySegment sample(int position) {
        return pixels.asSlice(position * sampleBytes, sampleBytes);
    }

    /** The first {@code count} labels as int32 {@code [count]} (a view: allocates). */
    public MemorySegment labels(int count) {
        return slot.asSlice(labelsOffset, 4L * count);
    }

    /** The first {@code count} dataset indices as int64 {@code [count]} (a view: allocates). */
    public MemorySegment indices(int count) {
        return slot.asSlice(indicesOffset, 8L * count);
    }

    /** The first {@code count} status codes as int32 {@code [count]} (a view: allocates). */
    public MemorySegment statuses(int count) {
        return slot.asSlice(statusOffset, 4L * count);
    }
}
