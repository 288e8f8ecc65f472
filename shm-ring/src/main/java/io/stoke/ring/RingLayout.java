package io.stoke.ring;

/**
 * The ring's memory layout, written down once. Every reader and writer (Java here,
 * {@code native/stoke_ring.h} for other languages) uses these offsets and nothing else.
 *
 * <pre>
 *  0               4096                                      slotsOffset (4096-aligned)
 *  +---------------+-----------------+-----------------+-----+-----------+-----------+----
 *  | ring header   | ready queue     | free queue      | pad | slot 0    | slot 1    | ...
 *  |               | (Agrona 1-to-1  | (Agrona 1-to-1  |     |           |           |
 *  |               |  ring buffer)   |  ring buffer)   |     |           |           |
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
 * payload is the slot number as an int32 ({@link #MSG_SLOT}). Both queues are Agrona
 * {@code OneToOneRingBuffer}s: exactly one writer and one reader at any moment. The ready queue's
 * writer is the producer and its reader the consumer; the free queue's writer is the consumer
 * (releases) and its reader the producer. The producer also writes the free queue, but only before
 * any consumer attached and while it reclaims the slots of a consumer that is gone, when no other
 * writer exists. One writer per queue is what lets a consumer without atomic compare-and-swap
 * (plain Python) take part.
 *
 * <p>Cross-process protocol (a ring in a {@code /dev/shm} file, see {@code docs/shared-memory.md}):
 * <ul>
 *   <li>Each slot's state ({@link #SLOT_STATE_OFFSET}) says who owns it: FREE (on the free queue),
 *       FILLING (a producer worker), READY (on the ready queue), HELD (the consumer took it and has
 *       not released it). The consumer writes HELD after taking a slot and FREE just before
 *       offering it to the free queue; the producer writes the rest.
 *   <li>A consumer attaches by compare-and-swap of {@link #CONSUMER_PID_OFFSET} from 0 to its pid,
 *       and detaches cleanly by writing {@code -pid}. When the field holds {@code -pid}, or a pid
 *       whose process is gone, the producer reclaims: every slot that is READY or HELD goes back
 *       on the ready queue in batch order (batches handed out but never released are delivered
 *       again to the next consumer), every FREE slot back on the free queue; then it writes 0.
 *   <li>The producer writes its pid and a heartbeat (every {@link #HEARTBEAT_INTERVAL_MILLIS});
 *       a consumer that finds the producer's process gone, or its heartbeat older than
 *       {@link #PRODUCER_TIMEOUT_MILLIS}, reports that the producer is gone instead of waiting.
 * </ul>
 */
public final class RingLayout {
    private RingLayout() {}

    /** "STOKERNG" read as a little-endian long. */
    public static final long MAGIC = 0x474E52454B4F5453L;

    public static final int VERSION = 1;
    public static final int PAGE = 4096;
    public static final int CACHE_LINE = 64;

    // ---- ring header: geometry, written once by the producer before anything else ----
    public static final int MAGIC_OFFSET = 0; // int64
    public static final int VERSION_OFFSET = 8; // int32
    public static final int HEADER_LENGTH_OFFSET = 12; // int32, = HEADER_LENGTH
    public static final int TOTAL_LENGTH_OFFSET = 16; // int64, bytes of the whole ring
    public static final int SLOT_COUNT_OFFSET = 24; // int32
    public static final int SAMPLES_PER_SLOT_OFFSET = 28; // int32, S
    public static final int SLOT_STRIDE_OFFSET = 32; // int64
    public static final int SAMPLE_BYTES_OFFSET = 40; // int64, bytes of one sample's pixels
    public static final int DTYPE_OFFSET = 48; // int32, DTYPE_*
    public static final int DIM_LAYOUT_OFFSET = 52; // int32, LAYOUT_*
    public static final int SHAPE_OFFSET = 56; // int32[3], one sample: HWC or CHW
    public static final int LABEL_TYPE_OFFSET = 68; // int32, LABEL_INT32
    public static final int READY_QUEUE_OFFSET_OFFSET = 72; // int64
    public static final int FREE_QUEUE_OFFSET_OFFSET = 80; // int64
    public static final int QUEUE_LENGTH_OFFSET = 88; // int32, capacity + Agrona trailer
    public static final int SLOT_LABELS_OFFSET_OFFSET = 92; // int32, within a slot
    public static final int SLOTS_OFFSET_OFFSET = 96; // int64
    public static final int SLOT_INDICES_OFFSET_OFFSET = 104; // int32, within a slot
    public static final int SLOT_STATUS_OFFSET_OFFSET = 108; // int32, within a slot
    public static final int SLOT_PIXELS_OFFSET_OFFSET = 112; // int32, within a slot

    // ---- liveness: one cache line each, written repeatedly ----
    public static final int PRODUCER_PID_OFFSET = 128; // int64
    public static final int PRODUCER_HEARTBEAT_OFFSET = 136; // int64, ms since epoch
    public static final int STATE_OFFSET = 144; // int32, STATE_*
    public static final int PUBLISHED_OFFSET = 152; // int64, batches published (not re-deliveries)
    public static final int REDELIVERED_OFFSET = 160; // int64, batches put back after a consumer left
    public static final int CONSUMER_PID_OFFSET = 192; // int64
    public static final int CONSUMER_HEARTBEAT_OFFSET = 200; // int64, ms since epoch
    public static final int CONSUMED_OFFSET = 208; // int64, batches taken by consumers
    // int64, nanoseconds consumers waited for a batch, summed: auto workers' stall signal. A consumer
    // that never adds here looks like one that never waits (the producer then says so, once).
    public static final int CONSUMER_WAIT_NANOS_OFFSET = 216;

    public static final int HEADER_LENGTH = PAGE;

    // ---- slot header ----
    public static final int SLOT_SEQUENCE_OFFSET = 0; // int64, batch number since start
    public static final int SLOT_EPOCH_OFFSET = 8; // int64
    public static final int SLOT_BATCH_INDEX_OFFSET = 16; // int64, batch number within the epoch
    public static final int SLOT_SAMPLE_COUNT_OFFSET = 24; // int32, valid samples (<= S)
    public static final int SLOT_SKIPPED_COUNT_OFFSET = 28; // int32, samples whose status != 0
    public static final int SLOT_PIXEL_BYTES_OFFSET = 32; // int64, = count * sampleBytes
    public static final int SLOT_DECODE_NANOS_OFFSET = 40; // int64, summed over samples
    public static final int SLOT_SOURCE_BYTES_OFFSET = 48; // int64, compressed bytes read
    public static final int SLOT_FLAGS_OFFSET = 56; // int32, SLOT_FLAG_*
    public static final int SLOT_STATE_OFFSET = 60; // int32, SLOT_STATE_*
    public static final int SLOT_HEADER_LENGTH = 64;

    /** The batch has at least one sample whose status is an error (policy FAIL). */
    public static final int SLOT_FLAG_FAILED = 1;
    /** The last batch of its epoch. */
    public static final int SLOT_FLAG_LAST_IN_EPOCH = 2;

    /** On the free queue (or about to be): nobody reads or writes the slot's contents. */
    public static final int SLOT_STATE_FREE = 0;
    /** Taken by a producer worker, being filled. */
    public static final int SLOT_STATE_FILLING = 1;
    /** Filled and on the ready queue. */
    public static final int SLOT_STATE_READY = 2;
    /** Taken by the consumer, not yet released. */
    public static final int SLOT_STATE_HELD = 3;

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

    // ---- Agrona ring buffer format (org.agrona.concurrent.ringbuffer, 2.x), repeated for non-Java consumers ----
    /** Offsets into a queue's trailer, which starts at its capacity. */
    public static final int QUEUE_TAIL_POSITION_OFFSET = 128; // int64, written by the queue's writer

    public static final int QUEUE_HEAD_CACHE_POSITION_OFFSET = 256; // int64, writer's private cache of head
    public static final int QUEUE_HEAD_POSITION_OFFSET = 384; // int64, written by the queue's reader
    public static final int QUEUE_TRAILER_LENGTH = 768;
    /** Record header: int32 length (negative while being written), int32 type; records 8-aligned. */
    public static final int QUEUE_RECORD_HEADER_LENGTH = 8;

    public static final int QUEUE_RECORD_ALIGNMENT = 8;
    public static final int QUEUE_PADDING_MSG_TYPE = -1;

    // ---- liveness timing ----
    /** How often the producer writes its heartbeat and checks on the consumer. */
    public static final int HEARTBEAT_INTERVAL_MILLIS = 50;
    /** A producer heartbeat older than this means the producer is gone (hung, or not visible by pid). */
    public static final int PRODUCER_TIMEOUT_MILLIS = 5000;

    // Sample status codes (each slot's status array) are defined by the loader's SampleStatus
    // enum: the ring carries them without knowing what they mean.

    public static long align(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }
}
