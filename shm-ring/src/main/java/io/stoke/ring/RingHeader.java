package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;

/**
 * Reads and checks a ring header written by another process. Nothing about the file is trusted:
 * every field is range-checked, every derived offset is recomputed from the geometry and compared
 * with what the header claims, and the whole ring must fit in the file, so that no later access
 * through the returned geometry can fall outside the mapping.
 */
public final class RingHeader {
    private RingHeader() {}

    /**
     * The geometry of the ring in {@code memory}, which maps a file of {@code fileSize} bytes.
     *
     * @throws RingFormatException naming the first field that is wrong
     */
    public static RingGeometry validate(MemorySegment memory, long fileSize, String name) {
        if (fileSize < HEADER_LENGTH || memory.byteSize() < HEADER_LENGTH) {
            throw new RingFormatException(name + ": " + fileSize + " bytes is too short for a ring header ("
                    + HEADER_LENGTH + " bytes); truncated or not a Stoke ring");
        }
        long magic = memory.get(JAVA_LONG, MAGIC_OFFSET);
        if (magic != MAGIC) {
            throw new RingFormatException(name + ": bad magic 0x" + Long.toHexString(magic) + " (expected 0x"
                    + Long.toHexString(MAGIC) + ", \"STOKERNG\"): not a Stoke ring");
        }
        int version = memory.get(JAVA_INT, VERSION_OFFSET);
        if (version != VERSION) {
            throw new RingFormatException(
                    name + ": layout version " + version + ", this code reads version " + VERSION);
        }
        expect(name, "header length", memory.get(JAVA_INT, HEADER_LENGTH_OFFSET), HEADER_LENGTH);
        long total = memory.get(JAVA_LONG, TOTAL_LENGTH_OFFSET);
        if (total < HEADER_LENGTH || total > fileSize) {
            throw new RingFormatException(
                    name + ": total length " + total + " does not fit in the file's " + fileSize + " bytes");
        }
        int slotCount = memory.get(JAVA_INT, SLOT_COUNT_OFFSET);
        int samples = memory.get(JAVA_INT, SAMPLES_PER_SLOT_OFFSET);
        int dtype = memory.get(JAVA_INT, DTYPE_OFFSET);
        int layout = memory.get(JAVA_INT, DIM_LAYOUT_OFFSET);
        int d0 = memory.get(JAVA_INT, SHAPE_OFFSET);
        int d1 = memory.get(JAVA_INT, SHAPE_OFFSET + 4);
        int d2 = memory.get(JAVA_INT, SHAPE_OFFSET + 8);
        if (layout != LAYOUT_HWC && layout != LAYOUT_CHW) {
            throw new RingFormatException(name + ": unknown dimension layout " + layout);
        }
        expect(name, "label type", memory.get(JAVA_INT, LABEL_TYPE_OFFSET), LABEL_INT32);
        RingGeometry g;
        try {
            g = new RingGeometry(slotCount, samples, dtype, layout, d0, d1, d2);
        } catch (IllegalArgumentException e) {
            throw new RingFormatException(name + ": bad geometry: " + e.getMessage());
        }
        // The geometry's own arithmetic is in longs; make sure no product wrapped before trusting it.
        try {
            long pixels = Math.multiplyExact(g.sampleBytes(), (long) samples);
            long stride = Math.addExact(g.slotPixelsOffset(), pixels);
            Math.addExact(g.slotsOffset(), Math.multiplyExact(stride, (long) slotCount));
        } catch (ArithmeticException e) {
            throw new RingFormatException(name + ": geometry overflows 64 bits (" + slotCount + " slots of " + samples
                    + " samples of " + d0 + "x" + d1 + "x" + d2 + ")");
        }
        expect(name, "sample bytes", memory.get(JAVA_LONG, SAMPLE_BYTES_OFFSET), g.sampleBytes());
        expect(name, "slot stride", memory.get(JAVA_LONG, SLOT_STRIDE_OFFSET), g.slotStride());
        expect(name, "ready queue offset", memory.get(JAVA_LONG, READY_QUEUE_OFFSET_OFFSET), g.readyQueueOffset());
        expect(name, "free queue offset", memory.get(JAVA_LONG, FREE_QUEUE_OFFSET_OFFSET), g.freeQueueOffset());
        expect(name, "queue length", memory.get(JAVA_INT, QUEUE_LENGTH_OFFSET), g.queueLength());
        expect(name, "slots offset", memory.get(JAVA_LONG, SLOTS_OFFSET_OFFSET), g.slotsOffset());
        expect(name, "slot labels offset", memory.get(JAVA_INT, SLOT_LABELS_OFFSET_OFFSET), g.slotLabelsOffset());
        expect(name, "slot indices offset", memory.get(JAVA_INT, SLOT_INDICES_OFFSET_OFFSET), g.slotIndicesOffset());
        expect(name, "slot status offset", memory.get(JAVA_INT, SLOT_STATUS_OFFSET_OFFSET), g.slotStatusOffset());
        expect(name, "slot pixels offset", memory.get(JAVA_INT, SLOT_PIXELS_OFFSET_OFFSET), g.slotPixelsOffset());
        expect(name, "total length", total, g.totalLength());
        if (g.totalLength() > memory.byteSize()) {
            throw new RingFormatException(
                    name + ": ring needs " + g.totalLength() + " bytes, mapping holds " + memory.byteSize());
        }
        return g;
    }

    private static void expect(String name, String field, long found, long expected) {
        if (found != expected) {
            throw new RingFormatException(name + ": " + field + " is " + found + ", the geometry gives " + expected);
        }
    }
}
