/*
 * stoke_ring.h: the shared-memory ring of Stoke, for consumers not written in Java.
 *
 * This header is the contract. It repeats io.stoke.ring.RingLayout (the Java source of truth) and
 * a test (ShmLayoutAgreementTest) compiles a program against it and compares every constant.
 * The protocol in words is docs/shared-memory.md.
 *
 * The file (under /dev/shm, mode 0600, created by `stoke serve --ring PATH`):
 *
 *  0               4096                                      slots_offset (4096-aligned)
 *  +---------------+-----------------+-----------------+-----+-----------+-----------+----
 *  | ring header   | ready queue     | free queue      | pad | slot 0    | slot 1    | ...
 *  +---------------+-----------------+-----------------+-----+-----------+-----------+----
 *
 *  one slot (slot_stride bytes):
 *  +-------------+-----------------+------------------+-----------------+-----+----------------------+
 *  | slot header | labels int32[S] | indices int64[S] | status int32[S] | pad | pixels S x sample    |
 *  | 64 bytes    |                 |                  |                 |     | (4096-aligned)       |
 *  +-------------+-----------------+------------------+-----------------+-----+----------------------+
 *
 * Everything little-endian at natural alignment. Both queues are Agrona OneToOneRingBuffers
 * (org.agrona.concurrent.ringbuffer, 2.x format) whose records carry one int32 slot number:
 *   - ready queue: the producer writes, the consumer reads;
 *   - free queue:  the consumer writes (release), the producer reads.
 *
 * Consumer protocol:
 *   1. open a named ring with O_RDWR | O_NOFOLLOW | O_NONBLOCK (never through a symbolic link, never
 *      waiting on a FIFO), fstat the descriptor and refuse, naming the path, its owner and its mode,
 *      anything but a regular file whose st_uid is geteuid() and that neither group nor others can
 *      write (S_IWGRP | S_IWOTH): /dev/shm is writable by every user, and a file another user put
 *      at the path could read or forge the batches. The producer creates rings 0600 and makes the
 *      same check; stoke_consumer.c shows it. (An inherited descriptor, /dev/fd/N, is itself a link
 *      and reachable by no other user: it is opened as it is.) Map the file, call
 *      stoke_ring_validate() before touching anything else;
 *   2. check the producer (STOKE_STATE, STOKE_PRODUCER_PID alive, heartbeat younger than
 *      STOKE_PRODUCER_TIMEOUT_MILLIS);
 *   3. take the seat: holding an fcntl write lock (F_SETLKW) on the file's byte 0, compare-and-swap
 *      STOKE_CONSUMER_PID from 0 to your pid, then unlock. A negative value or
 *      the pid of a dead process means the producer is still reclaiming the previous consumer's
 *      slots: wait and retry. The pid of a live process: another consumer is attached, give up;
 *   4. loop: stoke_queue_poll(ready) -> slot; stoke_slot_set_state(slot, STOKE_SLOT_STATE_HELD);
 *      read the slot; stoke_slot_set_state(slot, STOKE_SLOT_STATE_FREE), then stoke_queue_offer(free, slot).
 *      When nothing is ready: if stoke_ring_stream() is END_OF_STREAM, poll once more (required:
 *      see the memory-ordering note below), then stop; if it is
 *      PRODUCER_FAILED, or the producer's pid is gone, or its heartbeat is stale, report it and stop;
 *      otherwise write your heartbeat (STOKE_CONSUMER_HEARTBEAT, ms since the epoch) and wait;
 *   5. detach: write -pid into STOKE_CONSUMER_PID.
 * Re-delivery: when the consumer detaches or its process dies, the producer puts every slot the
 * consumer had taken and not released back on the ready queue, in batch order, ahead of newer
 * batches: the next consumer receives those batches again. Nothing released is delivered twice,
 * nothing published is lost.
 *
 * The producer and the consumer must see each other's pids (same pid namespace).
 *
 * A consumer that forks: the seat, the slots taken and their releases belong to the process whose
 * pid is in STOKE_CONSUMER_PID. A forked child inherits the shared mapping and must not act on it:
 * no stoke_consumer_leave (the parent's seat would be given up, and the batches it holds delivered
 * again to the next consumer), no stoke_slot_set_state or stoke_queue_offer of a slot (the producer
 * would refill a slot the parent still reads), no stoke_queue_poll (the child would take the
 * parent's next batch), no heartbeat. An atexit handler or destructor that detaches must compare
 * getpid() with the pid that took the seat and, in a child, only munmap. A child that reads opens
 * the ring itself, after the parent has detached. (Stoke's Python consumer, stoke.Ring, keeps
 * this rule by itself; Java processes do not fork.)
 */
#ifndef STOKE_RING_H
#define STOKE_RING_H

#include <stdint.h>
#include <stddef.h>

#define STOKE_MAGIC                   0x474E52454B4F5453ULL /* "STOKERNG" little-endian */
#define STOKE_VERSION                 1
#define STOKE_PAGE                    4096
#define STOKE_CACHE_LINE              64
#define STOKE_HEADER_LENGTH           4096

/* ---- ring header: geometry (written once, before the file is renamed into place) ---- */
#define STOKE_MAGIC_OFFSET                 0   /* int64 */
#define STOKE_VERSION_OFFSET               8   /* int32 */
#define STOKE_HEADER_LENGTH_OFFSET         12  /* int32 = STOKE_HEADER_LENGTH */
#define STOKE_TOTAL_LENGTH_OFFSET          16  /* int64, bytes of the whole ring */
#define STOKE_SLOT_COUNT_OFFSET            24  /* int32 */
#define STOKE_SAMPLES_PER_SLOT_OFFSET      28  /* int32, S: the batch size */
#define STOKE_SLOT_STRIDE_OFFSET           32  /* int64 */
#define STOKE_SAMPLE_BYTES_OFFSET          40  /* int64 */
#define STOKE_DTYPE_OFFSET                 48  /* int32, STOKE_DTYPE_* */
#define STOKE_DIM_LAYOUT_OFFSET            52  /* int32, STOKE_LAYOUT_* */
#define STOKE_SHAPE_OFFSET                 56  /* int32[3]: one sample, HWC or CHW */
#define STOKE_LABEL_TYPE_OFFSET            68  /* int32 = STOKE_LABEL_INT32 */
#define STOKE_READY_QUEUE_OFFSET_OFFSET    72  /* int64 */
#define STOKE_FREE_QUEUE_OFFSET_OFFSET     80  /* int64 */
#define STOKE_QUEUE_LENGTH_OFFSET          88  /* int32: capacity + STOKE_QUEUE_TRAILER_LENGTH */
#define STOKE_SLOT_LABELS_OFFSET_OFFSET    92  /* int32, within a slot */
#define STOKE_SLOTS_OFFSET_OFFSET          96  /* int64 */
#define STOKE_SLOT_INDICES_OFFSET_OFFSET   104 /* int32, within a slot */
#define STOKE_SLOT_STATUS_OFFSET_OFFSET    108 /* int32, within a slot */
#define STOKE_SLOT_PIXELS_OFFSET_OFFSET    112 /* int32, within a slot */

/* ---- liveness and counters ---- */
#define STOKE_PRODUCER_PID_OFFSET          128 /* int64 */
#define STOKE_PRODUCER_HEARTBEAT_OFFSET    136 /* int64, ms since the epoch */
#define STOKE_STATE_OFFSET                 144 /* int32, STOKE_STATE_* */
#define STOKE_PUBLISHED_OFFSET             152 /* int64, batches published */
#define STOKE_REDELIVERED_OFFSET           160 /* int64, batches re-delivered after a consumer left */
#define STOKE_CONSUMER_PID_OFFSET          192 /* int64: 0 none, pid attached, -pid detached */
#define STOKE_CONSUMER_HEARTBEAT_OFFSET    200 /* int64, ms since the epoch */
#define STOKE_CONSUMED_OFFSET              208 /* int64, batches taken (atomic add) */
#define STOKE_CONSUMER_WAIT_NANOS_OFFSET   216 /* int64, ns waited for batches (atomic add) */

/* ---- slot header ---- */
#define STOKE_SLOT_SEQUENCE_OFFSET         0   /* int64, batch number since the producer started */
#define STOKE_SLOT_EPOCH_OFFSET            8   /* int64 */
#define STOKE_SLOT_BATCH_INDEX_OFFSET      16  /* int64, batch number within the epoch */
#define STOKE_SLOT_SAMPLE_COUNT_OFFSET     24  /* int32, valid samples n <= S */
#define STOKE_SLOT_SKIPPED_COUNT_OFFSET    28  /* int32, samples whose status != 0 */
#define STOKE_SLOT_PIXEL_BYTES_OFFSET      32  /* int64, n * sample bytes */
#define STOKE_SLOT_DECODE_NANOS_OFFSET     40  /* int64 */
#define STOKE_SLOT_SOURCE_BYTES_OFFSET     48  /* int64 */
#define STOKE_SLOT_FLAGS_OFFSET            56  /* int32, STOKE_SLOT_FLAG_* */
#define STOKE_SLOT_STATE_OFFSET            60  /* int32, STOKE_SLOT_STATE_* */
#define STOKE_SLOT_HEADER_LENGTH           64

#define STOKE_SLOT_FLAG_FAILED             1
#define STOKE_SLOT_FLAG_LAST_IN_EPOCH      2

#define STOKE_SLOT_STATE_FREE              0
#define STOKE_SLOT_STATE_FILLING           1
#define STOKE_SLOT_STATE_READY             2
#define STOKE_SLOT_STATE_HELD              3

#define STOKE_DTYPE_UINT8                  1
#define STOKE_DTYPE_FLOAT32                2
#define STOKE_LAYOUT_HWC                   0
#define STOKE_LAYOUT_CHW                   1
#define STOKE_LABEL_INT32                  1

#define STOKE_STATE_RUNNING                0
#define STOKE_STATE_END_OF_STREAM          1
#define STOKE_STATE_PRODUCER_FAILED        2

/* ---- sample status codes (the int32 per sample in a slot's status array), defined by the Java enum
 * io.stoke.loader.error.SampleStatus; SampleStatusTablesTest checks these against it ---- */
#define STOKE_SAMPLE_OK                    0
#define STOKE_SAMPLE_READ_ERROR            1
#define STOKE_SAMPLE_EMPTY_FILE            2
#define STOKE_SAMPLE_NOT_IMAGE             3   /* no known image signature (was NOT_JPEG) */
#define STOKE_SAMPLE_CORRUPT               4
#define STOKE_SAMPLE_TRUNCATED             5
#define STOKE_SAMPLE_TOO_LARGE             6
#define STOKE_SAMPLE_UNSUPPORTED           7
#define STOKE_SAMPLE_NO_IMAGE              8   /* tar shards: a sample with no image member */
#define STOKE_SAMPLE_NO_LABEL              9   /* tar shards: no .cls where others have one */
#define STOKE_SAMPLE_BAD_LABEL             10  /* tar shards: .cls is not an integer */
#define STOKE_SAMPLE_MEMBER_TRUNCATED      11  /* tar shards: member runs past the shard's end */
#define STOKE_SAMPLE_BAD_RAW               12  /* raw shards: .npy is not uint8 [crop, crop, 3] */
#define STOKE_SAMPLE_FORMAT_NOT_DECODED    13  /* an image format Stoke does not decode (TIFF, GIF, ...) */

/* ---- Agrona OneToOneRingBuffer format ---- */
#define STOKE_MSG_SLOT                     1   /* record type of a slot number */
#define STOKE_QUEUE_TAIL_POSITION_OFFSET   128 /* int64 in the trailer (which starts at capacity) */
#define STOKE_QUEUE_HEAD_CACHE_POSITION_OFFSET 256
#define STOKE_QUEUE_HEAD_POSITION_OFFSET   384
#define STOKE_QUEUE_TRAILER_LENGTH         768
#define STOKE_QUEUE_RECORD_HEADER_LENGTH   8   /* int32 length (negative while written), int32 type */
#define STOKE_QUEUE_RECORD_ALIGNMENT       8
#define STOKE_QUEUE_PADDING_MSG_TYPE       (-1)

#define STOKE_HEARTBEAT_INTERVAL_MILLIS    50
#define STOKE_PRODUCER_TIMEOUT_MILLIS      5000

#ifndef STOKE_RING_NO_FUNCTIONS

#include <stdatomic.h>

/* Plain reads of fields that do not change while they are read (the geometry, a slot's contents
 * while the consumer holds it). volatile only so that a hostile file changed under the validator
 * is read once per check, not re-read by the compiler after it. */
#define STOKE_I32(base, off) (*(volatile int32_t *)((uint8_t *)(base) + (off)))
#define STOKE_I64(base, off) (*(volatile int64_t *)((uint8_t *)(base) + (off)))

/*
 * The words through which the two processes hand things to each other, as C11 atomics. The Java
 * side does the same with VarHandle release/acquire (io.stoke.ring.RingState, SlotHeader):
 *   - a batch: the producer fills the slot, then commits its number on the ready queue with a
 *     release store of the record's length; stoke_queue_poll reads that length with an acquire,
 *     so everything the producer wrote into the slot is visible once the slot number is;
 *   - a release: the consumer writes STOKE_SLOT_STATE_FREE, then commits the slot number on the
 *     free queue (release); the producer's poll of it is an acquire;
 *   - the end of the stream (or a failure): the producer publishes its last batch, then writes
 *     STOKE_STATE with a release (stoke_ring_stream reads it with an acquire). A consumer that
 *     finds the ready queue empty, reads END_OF_STREAM, and polls once more is therefore
 *     guaranteed to get every batch published before the end: that second poll is required;
 *   - liveness (pids, heartbeats): release on write, acquire on read;
 *   - a slot's state word: sequentially consistent, as Java's volatile, since the producer reads
 *     it to reclaim the slots of a consumer that died at any point.
 * A shared mapping is ordinary memory to these atomics: int32_t and int64_t atomics are lock-free
 * on every platform Stoke runs on, so the same bytes are atomic in both processes.
 */
#define STOKE__A32(base, off) ((_Atomic int32_t *)((uint8_t *)(base) + (off)))
#define STOKE__A64(base, off) ((_Atomic int64_t *)((uint8_t *)(base) + (off)))

/* STOKE_STATE_RUNNING, _END_OF_STREAM or _PRODUCER_FAILED (acquire). */
static inline int32_t stoke_ring_stream(const void *base) {
    return atomic_load_explicit(STOKE__A32(base, STOKE_STATE_OFFSET), memory_order_acquire);
}
static inline int64_t stoke_producer_pid(const void *base) {
    return atomic_load_explicit(STOKE__A64(base, STOKE_PRODUCER_PID_OFFSET), memory_order_acquire);
}
static inline int64_t stoke_producer_heartbeat(const void *base) {
    return atomic_load_explicit(STOKE__A64(base, STOKE_PRODUCER_HEARTBEAT_OFFSET), memory_order_acquire);
}
static inline void stoke_consumer_heartbeat(void *base, int64_t millis) {
    atomic_store_explicit(STOKE__A64(base, STOKE_CONSUMER_HEARTBEAT_OFFSET), millis, memory_order_release);
}
/* Takes the seat: *expected (normally 0) -> pid. On failure *expected holds the seat's value. */
static inline int stoke_consumer_seat_cas(void *base, int64_t *expected, int64_t pid) {
    return atomic_compare_exchange_strong(STOKE__A64(base, STOKE_CONSUMER_PID_OFFSET), expected, pid);
}
/* Leaves the seat (pid -> -pid) after the last release: a release, ordered after it. Only the
 * process that took the seat calls it, never a forked child (see the fork note above). */
static inline void stoke_consumer_leave(void *base, int64_t pid) {
    atomic_store_explicit(STOKE__A64(base, STOKE_CONSUMER_PID_OFFSET), -pid, memory_order_release);
}
/* The consumer waited nanos for the batch it just took: a statistic (the producer's auto workers
 * read it as the stall), so no ordering beyond atomicity. */
static inline void stoke_consumer_wait_add(void *base, int64_t nanos) {
    atomic_fetch_add_explicit(STOKE__A64(base, STOKE_CONSUMER_WAIT_NANOS_OFFSET), nanos, memory_order_relaxed);
}
/* One more batch taken: a statistic, so no ordering beyond atomicity. */
static inline void stoke_consumed_add(void *base) {
    atomic_fetch_add_explicit(STOKE__A64(base, STOKE_CONSUMED_OFFSET), 1, memory_order_relaxed);
}
/* A slot's owner, STOKE_SLOT_STATE_*; slot points at the slot's first byte. */
static inline int32_t stoke_slot_state(const void *slot) {
    return atomic_load(STOKE__A32(slot, STOKE_SLOT_STATE_OFFSET));
}
static inline void stoke_slot_set_state(void *slot, int32_t state) {
    atomic_store(STOKE__A32(slot, STOKE_SLOT_STATE_OFFSET), state);
}

static inline int64_t stoke_align(int64_t v, int64_t a) { return (v + a - 1) & -a; }
/* Queue positions wrap as Java's longs do: a hostile file may hold any value, and signed overflow
 * would be undefined behaviour in C. */
static inline int64_t stoke__wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int32_t stoke__used(int64_t tail, int64_t head) { return (int32_t)(uint32_t)((uint64_t)tail - (uint64_t)head); }

/* The geometry of a validated ring; every offset recomputed, never taken from the file alone. */
typedef struct {
    int32_t slot_count, samples_per_slot, dtype, dim_layout, shape[3];
    int64_t sample_bytes, slot_stride, slots_offset, total_length;
    int64_t ready_queue_offset, free_queue_offset;
    int32_t queue_length, queue_capacity;
    int32_t labels_offset, indices_offset, status_offset, pixels_offset;
} stoke_geometry;

/*
 * Validates the header of a mapping of file_size bytes. Returns 0 and fills g, or -1 with a
 * message in err. After 0, every offset in g lies inside the file.
 */
static inline int stoke_ring_validate(const void *base, int64_t file_size, stoke_geometry *g, char *err, size_t errlen);

#include <stdio.h>

static inline int stoke__fail(char *err, size_t errlen, const char *what, int64_t found, int64_t expected) {
    snprintf(err, errlen, "%s is %lld, expected %lld", what, (long long)found, (long long)expected);
    return -1;
}

static inline int32_t stoke__next_pow2(int32_t v) { int32_t p = 1; while (p < v) p <<= 1; return p; }

static inline int stoke_ring_validate(const void *base, int64_t file_size, stoke_geometry *g, char *err, size_t errlen) {
    if (file_size < STOKE_HEADER_LENGTH) {
        snprintf(err, errlen, "file of %lld bytes is too short for a ring header (%d bytes): truncated or not a Stoke ring",
                 (long long)file_size, STOKE_HEADER_LENGTH);
        return -1;
    }
    if ((uint64_t)STOKE_I64(base, STOKE_MAGIC_OFFSET) != STOKE_MAGIC) {
        snprintf(err, errlen, "bad magic 0x%llx: not a Stoke ring", (unsigned long long)STOKE_I64(base, STOKE_MAGIC_OFFSET));
        return -1;
    }
    if (STOKE_I32(base, STOKE_VERSION_OFFSET) != STOKE_VERSION)
        return stoke__fail(err, errlen, "layout version", STOKE_I32(base, STOKE_VERSION_OFFSET), STOKE_VERSION);
    if (STOKE_I32(base, STOKE_HEADER_LENGTH_OFFSET) != STOKE_HEADER_LENGTH)
        return stoke__fail(err, errlen, "header length", STOKE_I32(base, STOKE_HEADER_LENGTH_OFFSET), STOKE_HEADER_LENGTH);
    int64_t total = STOKE_I64(base, STOKE_TOTAL_LENGTH_OFFSET);
    if (total < STOKE_HEADER_LENGTH || total > file_size)
        return stoke__fail(err, errlen, "total length (must fit the file)", total, file_size);
    g->slot_count = STOKE_I32(base, STOKE_SLOT_COUNT_OFFSET);
    g->samples_per_slot = STOKE_I32(base, STOKE_SAMPLES_PER_SLOT_OFFSET);
    g->dtype = STOKE_I32(base, STOKE_DTYPE_OFFSET);
    g->dim_layout = STOKE_I32(base, STOKE_DIM_LAYOUT_OFFSET);
    for (int i = 0; i < 3; i++) g->shape[i] = STOKE_I32(base, STOKE_SHAPE_OFFSET + 4 * i);
    if (g->slot_count < 1 || g->slot_count > (1 << 16))
        return stoke__fail(err, errlen, "slot count (1..65536)", g->slot_count, 1);
    if (g->samples_per_slot < 1 || g->samples_per_slot > (1 << 20))
        return stoke__fail(err, errlen, "samples per slot (1..1048576)", g->samples_per_slot, 1);
    if (g->dtype != STOKE_DTYPE_UINT8 && g->dtype != STOKE_DTYPE_FLOAT32)
        return stoke__fail(err, errlen, "dtype", g->dtype, STOKE_DTYPE_UINT8);
    if (g->dim_layout != STOKE_LAYOUT_HWC && g->dim_layout != STOKE_LAYOUT_CHW)
        return stoke__fail(err, errlen, "dimension layout", g->dim_layout, STOKE_LAYOUT_HWC);
    if (STOKE_I32(base, STOKE_LABEL_TYPE_OFFSET) != STOKE_LABEL_INT32)
        return stoke__fail(err, errlen, "label type", STOKE_I32(base, STOKE_LABEL_TYPE_OFFSET), STOKE_LABEL_INT32);
    for (int i = 0; i < 3; i++)
        if (g->shape[i] < 1) return stoke__fail(err, errlen, "sample shape dimension", g->shape[i], 1);
    /* two at a time: the product of three int32s overflows an int64 (found by fuzz_ring_validate) */
    int64_t elems = (int64_t)g->shape[0] * g->shape[1]; /* < 2^62 */
    if (elems > INT32_MAX) return stoke__fail(err, errlen, "elements per sample", elems, INT32_MAX);
    elems *= g->shape[2]; /* < 2^62 */
    if (elems > INT32_MAX) return stoke__fail(err, errlen, "elements per sample", elems, INT32_MAX);
    int64_t S = g->samples_per_slot;
    g->sample_bytes = elems * (g->dtype == STOKE_DTYPE_FLOAT32 ? 4 : 1);   /* < 2^33 */
    g->labels_offset = STOKE_SLOT_HEADER_LENGTH;
    g->indices_offset = (int32_t)stoke_align(g->labels_offset + 4 * S, STOKE_CACHE_LINE);
    g->status_offset = (int32_t)stoke_align(g->indices_offset + 8 * S, STOKE_CACHE_LINE);
    g->pixels_offset = (int32_t)stoke_align(g->status_offset + 4 * S, STOKE_PAGE);
    int64_t pixel_bytes;
    if (__builtin_mul_overflow(g->sample_bytes, S, &pixel_bytes))
        return stoke__fail(err, errlen, "slot pixel bytes (overflow)", -1, 0);
    g->slot_stride = stoke_align(g->pixels_offset + pixel_bytes, STOKE_PAGE); /* < 2^54 */
    int32_t q = g->slot_count * 32;
    g->queue_capacity = q < 1024 ? 1024 : stoke__next_pow2(q);
    g->queue_length = g->queue_capacity + STOKE_QUEUE_TRAILER_LENGTH;
    g->ready_queue_offset = STOKE_HEADER_LENGTH;
    g->free_queue_offset = g->ready_queue_offset + stoke_align(g->queue_length, STOKE_CACHE_LINE);
    g->slots_offset = stoke_align(g->free_queue_offset + g->queue_length, STOKE_PAGE);
    int64_t slots_bytes;
    if (__builtin_mul_overflow(g->slot_stride, (int64_t)g->slot_count, &slots_bytes)
        || __builtin_add_overflow(g->slots_offset, slots_bytes, &g->total_length))
        return stoke__fail(err, errlen, "total length (overflow)", -1, 0);
#define STOKE__EXPECT(what, off, type, value) \
    if (STOKE_##type(base, off) != (value)) return stoke__fail(err, errlen, what, STOKE_##type(base, off), value)
    STOKE__EXPECT("sample bytes", STOKE_SAMPLE_BYTES_OFFSET, I64, g->sample_bytes);
    STOKE__EXPECT("slot stride", STOKE_SLOT_STRIDE_OFFSET, I64, g->slot_stride);
    STOKE__EXPECT("ready queue offset", STOKE_READY_QUEUE_OFFSET_OFFSET, I64, g->ready_queue_offset);
    STOKE__EXPECT("free queue offset", STOKE_FREE_QUEUE_OFFSET_OFFSET, I64, g->free_queue_offset);
    STOKE__EXPECT("queue length", STOKE_QUEUE_LENGTH_OFFSET, I32, g->queue_length);
    STOKE__EXPECT("slots offset", STOKE_SLOTS_OFFSET_OFFSET, I64, g->slots_offset);
    STOKE__EXPECT("slot labels offset", STOKE_SLOT_LABELS_OFFSET_OFFSET, I32, g->labels_offset);
    STOKE__EXPECT("slot indices offset", STOKE_SLOT_INDICES_OFFSET_OFFSET, I32, g->indices_offset);
    STOKE__EXPECT("slot status offset", STOKE_SLOT_STATUS_OFFSET_OFFSET, I32, g->status_offset);
    STOKE__EXPECT("slot pixels offset", STOKE_SLOT_PIXELS_OFFSET_OFFSET, I32, g->pixels_offset);
    STOKE__EXPECT("total length", STOKE_TOTAL_LENGTH_OFFSET, I64, g->total_length);
#undef STOKE__EXPECT
    if (g->total_length > file_size) return stoke__fail(err, errlen, "total length (must fit the file)", g->total_length, file_size);
    return 0;
}

/* One queue (ready or free) inside the mapping. */
typedef struct {
    uint8_t *buf;       /* records; the trailer starts at buf + capacity */
    int32_t capacity;   /* power of two */
    int32_t slot_count; /* slot numbers read are checked against this */
} stoke_queue;

/*
 * Reader side of an Agrona OneToOneRingBuffer, one message at most. Returns the slot number, -1
 * when no message is ready, -2 when the queue is corrupt (a slot number out of range, a record
 * that crosses the end, a head position that is not a record boundary).
 */
static inline int32_t stoke_queue_poll(stoke_queue *q) {
    _Atomic int64_t *head_pos = STOKE__A64(q->buf, q->capacity + STOKE_QUEUE_HEAD_POSITION_OFFSET);
    for (int attempt = 0; attempt < 2; attempt++) { /* a padding record may precede the message */
        int64_t head = atomic_load_explicit(head_pos, memory_order_relaxed); /* ours: only the reader writes it */
        /* records start at multiples of 8: any other head is a corrupt (or hostile) file, and
         * reading a record there would be a misaligned atomic (found by fuzz_ring_validate) */
        if ((head & (STOKE_QUEUE_RECORD_ALIGNMENT - 1)) != 0) return -2;
        int32_t index = (int32_t)(head & (q->capacity - 1));
        /* acquire: pairs with the writer's release of the length; the record and, for the ready
         * queue, the slot's contents are visible after it */
        int32_t length = atomic_load_explicit(STOKE__A32(q->buf, index), memory_order_acquire);
        if (length <= 0) return -1;
        if (length > q->capacity - index) return -2; /* a record may not cross the end */
        int32_t type = *(int32_t *)(q->buf + index + 4);
        int32_t slot = -1;
        if (type != STOKE_QUEUE_PADDING_MSG_TYPE) slot = *(int32_t *)(q->buf + index + STOKE_QUEUE_RECORD_HEADER_LENGTH);
        /* release: the writer may reuse the record's bytes only after we have read them */
        atomic_store_explicit(head_pos, stoke__wrap_add(head, stoke_align(length, STOKE_QUEUE_RECORD_ALIGNMENT)), memory_order_release);
        if (type == STOKE_QUEUE_PADDING_MSG_TYPE) continue;
        if (slot < 0 || slot >= q->slot_count) return -2;
        return slot;
    }
    return -1;
}

/*
 * Writer side of an Agrona OneToOneRingBuffer (tryClaim + commit of one int32). Returns 0, or -1
 * when the queue is full (cannot happen in a valid ring: it has room for every slot twice over) or
 * its tail position is not a record boundary (a corrupt file).
 */
static inline int stoke_queue_offer(stoke_queue *q, int32_t slot) {
    uint8_t *b = q->buf;
    int32_t cap = q->capacity, mask = cap - 1;
    _Atomic int64_t *tail_pos = STOKE__A64(b, cap + STOKE_QUEUE_TAIL_POSITION_OFFSET);
    _Atomic int64_t *head_cache = STOKE__A64(b, cap + STOKE_QUEUE_HEAD_CACHE_POSITION_OFFSET);
    _Atomic int64_t *head_pos = STOKE__A64(b, cap + STOKE_QUEUE_HEAD_POSITION_OFFSET);
    const memory_order relaxed = memory_order_relaxed, acquire = memory_order_acquire, release = memory_order_release;
    const int32_t record_length = STOKE_QUEUE_RECORD_HEADER_LENGTH + 4;
    const int32_t aligned = (int32_t)stoke_align(record_length, STOKE_QUEUE_RECORD_ALIGNMENT);
    const int32_t required = aligned + STOKE_QUEUE_RECORD_HEADER_LENGTH;
    /* tail and the head cache are the writer's own; the head is the reader's (acquire: the
     * reader is done with the bytes it released) */
    int64_t head = atomic_load_explicit(head_cache, relaxed), tail = atomic_load_explicit(tail_pos, relaxed);
    if ((tail & (STOKE_QUEUE_RECORD_ALIGNMENT - 1)) != 0) return -1; /* a corrupt queue: records are 8-aligned */
    if (required > (int64_t)cap - stoke__used(tail, head)) {
        head = atomic_load_explicit(head_pos, acquire);
        if (required > (int64_t)cap - stoke__used(tail, head)) return -1;
        atomic_store_explicit(head_cache, head, relaxed);
    }
    int32_t padding = 0, record_index = (int32_t)(tail & mask), to_end = cap - record_index;
    int32_t write_index = record_index;
    int64_t next_tail = stoke__wrap_add(tail, aligned);
    if (aligned == to_end) {
        atomic_store_explicit(tail_pos, next_tail, release);
        atomic_store_explicit(STOKE__A64(b, 0), 0, relaxed); /* pre-zero the next record's header */
    } else {
        if (required > to_end) {
            write_index = 0;
            int32_t head_index = (int32_t)(head & mask);
            if (required > head_index) {
                head = atomic_load_explicit(head_pos, acquire);
                head_index = (int32_t)(head & mask);
                if (required > head_index) { write_index = -1; next_tail = tail; }
                atomic_store_explicit(head_cache, head, relaxed);
            }
            padding = to_end;
            next_tail = stoke__wrap_add(next_tail, padding);
        }
        atomic_store_explicit(tail_pos, next_tail, release);
        if (padding != 0) {
            atomic_store_explicit(STOKE__A64(b, 0), 0, relaxed);
            atomic_store_explicit(STOKE__A32(b, record_index), -padding, release);
            atomic_store_explicit(STOKE__A32(b, record_index + 4), STOKE_QUEUE_PADDING_MSG_TYPE, relaxed);
            atomic_store_explicit(STOKE__A32(b, record_index), padding, release);
        }
        if (write_index < 0) return -1;
        atomic_store_explicit(STOKE__A64(b, write_index + aligned), 0, relaxed); /* pre-zero the next record's header */
    }
    /* Agrona's claim (negative length), the message, then the commit: a release of the length,
     * which the reader's acquire pairs with */
    atomic_store_explicit(STOKE__A32(b, write_index), -record_length, release);
    atomic_store_explicit(STOKE__A32(b, write_index + 4), STOKE_MSG_SLOT, relaxed);
    atomic_store_explicit(STOKE__A32(b, write_index + STOKE_QUEUE_RECORD_HEADER_LENGTH), slot, relaxed);
    atomic_store_explicit(STOKE__A32(b, write_index), record_length, release);
    return 0;
}

#endif /* STOKE_RING_NO_FUNCTIONS */
#endif /* STOKE_RING_H */
