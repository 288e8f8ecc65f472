package io.stoke.ring;

/**
 * The ring's memory layout, written down once. Every reader and writer (Java here,
 * {@code native/stoke_ring.h} for other languages) uses these offsets and nothing else.
 *
 * <pre>
 *  0               4096                                      slotsOffset (4096-aligned)
 *  +---------------+-----------------+-----------------+-----+-----------+-----------+----
 *  | ring header   | ready queue     | free queue      | pad | slot 0    | slot 1    | ...
 *  |               | (Agrona 1-to-1  | (Agrona many-   |     |           |           |
 *  |               |  ring buffer)   |  to-1 buffer)   |     |           |           |
 *  +---------------+-----------------+-----------------+-----+-----------+-----------+----
 *
 *  one slot (slotStride bytes, 4096-aligned so that slots can be pinned page by page):
 *  +-------------+-------------------+-------------------+------------------+-----+-------------------------+
 *  | slot header | labels int32[S]   | indices int64[S]  | status int32[S]  | pad | pixels S x sampleBytes  |
 *  | 64 bytes    | (64-aligned)      | (64-aligned)      | (64-aligned)     |     | (4096-aligned)          |
 *  +-------------+-------------------+-------------------+------------------+-----+-------------------------+
 *  S = samplesPerSlot (the batch size).
 * </pre>
 *
 * All fields are little-endian, at natural alignment. A queue message is one record whose
 * payload is the slot number as an int32 ({@link #MSG_SLOT}).
 */
public final class RingLayout {
    private RingLayout() {
    }

    /** "STOKERNG" read as a little-endian long. */
    public static final long MAGIC = 0x474E52454B4F5453L;
    public static final int VERSION = 1;
    public static final int PAGE = 4096;
    public static final int CACHE_LINE = 64;

    // ---- ring header: geometry, written once by the producer before anything else ----
    public static final int MAGIC_OFFSET = 0;                      // int64
    public static final int VERSION_OFFSET = 8;                    // int32
    public static final int HEADER_LENGTH_OFFSET = 12;             // int32, = HEADER_LENGTH
    public static final int TOTAL_LENGTH_OFFSET = 16;              // int64, bytes of the whole ring
    public static final int SLOT_COUNT_OFFSET = 24;                // int32
    public static final int SAMPLES_PER_SLOT_OFFSET = 28;          // int32, S
    public static final int SLOT_STRIDE_OFFSET = 32;               // int64
    public static final int SAMPLE_BYTES_OFFSET = 40;              // int64, bytes of one sample's pixels
    public static final int DTYPE_OFFSET = 48;                     // int32, DTYPE_*
    public static final int DIM_LAYOUT_OFFSET = 52;                // int32, LAYOUT_*
    public static final int SHAPE_OFFSET = 56;                     // int32[3], one sample: HWC or CHW
    public static final int LABEL_TYPE_OFFSET = 68;                // int32, LABEL_INT32
    public static final int READY_QUEUE_OFFSET_OFFSET = 72;        // int64
    public static final int FREE_QUEUE_OFFSET_OFFSET = 80;         // int64
    public static final int QUEUE_LENGTH_OFFSET = 88;              // int32, capacity + Agrona trailer
    public static final int SLOT_LABELS_OFFSET_OFFSET = 92;        // int32, within a slot
    public static final int SLOTS_OFFSET_OFFSET = 96;              // int64
    public static final int SLOT_INDICES_OFFSET_OFFSET = 104;      // int32, within a slot
    public static final int SLOT_STATUS_OFFSET_OFFSET = 108;       // int32, within a slot
    public static final int SLOT_PIXELS_OFFSET_OFFSET = 112;       // int32, within a slot

    // ---- liveness: one cache line each, written repeatedly ----
    public static final int PRODUCER_PID_OFFSET = 128;             // int64
    public static final int PRODUCER_HEARTBEAT_OFFSET = 136;       // int64, ms since epoch
    public static final int STATE_OFFSET = 144;                    // int32, STATE_*
    public static final int CONSUMER_PID_OFFSET = 192;             // int64
    public static final int CONSUMER_HEARTBEAT_OFFSET = 200;       // int64, ms since epoch

    public static final int HEADER_LENGTH = PAGE;

    // ---- slot header ----
    public static final int SLOT_SEQUENCE_OFFSET = 0;              // int64, batch number since start
    public static final int SLOT_EPOCH_OFFSET = 8;                 // int64
    public static final int SLOT_BATCH_INDEX_OFFSET = 16;          // int64, batch number within the epoch
    public static final int SLOT_SAMPLE_COUNT_OFFSET = 24;         // int32, valid samples (<= S)
    public static final int SLOT_SKIPPED_COUNT_OFFSET = 28;        // int32, samples whose status != 0
    public static final int SLOT_PIXEL_BYTES_OFFSET = 32;          // int64, = count * sampleBytes
    public static final int SLOT_DECODE_NANOS_OFFSET = 40;         // int64, summed over samples
    public static final int SLOT_SOURCE_BYTES_OFFSET = 48;         // int64, compressed bytes read
    public static final int SLOT_FLAGS_OFFSET = 56;                // int32, SLOT_FLAG_*
    public static final int SLOT_HEADER_LENGTH = 64;

    /** The batch has at least one sample whose status is an error (policy FAIL). */
    public static final int SLOT_FLAG_FAILED = 1;
    /** The last batch of its epoch. */
    public static final int SLOT_FLAG_LAST_IN_EPOCH = 2;

    public static final int DTYPE_UINT8 = 1;
    public static final int DTYPE_FLOAT32 = 2;
    public static final int LAYOUT_HWC = 0;
    public static final int LAYOUT_CHW = 1;
    public static final int LABEL_INT32 = 1;

    public static final int STATE_RUNNING = 0;
    public static final int STATE_END_OF_STREAM = 1;
    public static final int STATE_PRODUCER_FAILED = 2;

    /** Agrona message type id of a slot descriptor. */
    public static final int MSG_SLOT = 1;

    public static long align(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }
}
