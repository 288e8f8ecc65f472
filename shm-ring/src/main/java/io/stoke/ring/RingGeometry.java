package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;

import org.agrona.BitUtil;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * The sizes of one ring, with every offset derived from them by {@link RingLayout}'s rules.
 *
 * @param slotCount      number of slots (batches in flight at most)
 * @param samplesPerSlot batch size S
 * @param dtype          {@link RingLayout#DTYPE_UINT8} or {@link RingLayout#DTYPE_FLOAT32}
 * @param dimLayout      {@link RingLayout#LAYOUT_HWC} or {@link RingLayout#LAYOUT_CHW}
 * @param d0             first dimension of one sample (H for HWC, C for CHW)
 * @param d1             second dimension
 * @param d2             third dimension
 */
public record RingGeometry(int slotCount, int samplesPerSlot, int dtype, int dimLayout, int d0, int d1, int d2) {
    public RingGeometry {
        if (slotCount < 1 || slotCount > 1 << 16) {
            throw new IllegalArgumentException("slotCount must be in [1, 65536]: " + slotCount);
        }
        if (samplesPerSlot < 1 || samplesPerSlot > 1 << 20) {
            throw new IllegalArgumentException("samplesPerSlot must be in [1, 1048576]: " + samplesPerSlot);
        }
        if (dtype != DTYPE_UINT8 && dtype != DTYPE_FLOAT32) {
            throw new IllegalArgumentException("unknown dtype " + dtype);
        }
        // Two at a time: the product of three ints can overflow a long and come out negative.
        if (d0 < 1
                || d1 < 1
                || d2 < 1
                || (long) d0 * d1 > Integer.MAX_VALUE
                || (long) d0 * d1 * d2 > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("bad sample shape " + d0 + "x" + d1 + "x" + d2);
        }
    }

    public int elementSize() {
        return dtype == DTYPE_FLOAT32 ? 4 : 1;
    }

    public long sampleBytes() {
        return (long) d0 * d1 * d2 * elementSize();
    }

    public int slotLabelsOffset() {
        return SLOT_HEADER_LENGTH;
    }

    public int slotIndicesOffset() {
        return (int) align(slotLabelsOffset() + 4L * samplesPerSlot, CACHE_LINE);
    }

    public int slotStatusOffset() {
        return (int) align(slotIndicesOffset() + 8L * samplesPerSlot, CACHE_LINE);
    }

    public int slotPixelsOffset() {
        return (int) align(slotStatusOffset() + 4L * samplesPerSlot, PAGE);
    }

    public long slotStride() {
        return align(slotPixelsOffset() + sampleBytes() * samplesPerSlot, PAGE);
    }

    /** Room for every slot's descriptor twice over; each record is 16 bytes once aligned. */
    public int queueCapacity() {
        return Math.max(1024, BitUtil.findNextPositivePowerOfTwo(slotCount * 32));
    }

    public int queueLength() {
        return queueCapacity() + RingBufferDescriptor.TRAILER_LENGTH;
    }

    public long readyQueueOffset() {
        return HEADER_LENGTH;
    }

    public long freeQueueOffset() {
        return readyQueueOffset() + align(queueLength(), CACHE_LINE);
    }

    public long slotsOffset() {
        return align(freeQueueOffset() + queueLength(), PAGE);
    }

    public long totalLength() {
        return slotsOffset() + slotStride() * slotCount;
    }
}
