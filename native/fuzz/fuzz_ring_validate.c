/*
 * libFuzzer target over stoke_ring_validate (native/stoke_ring.h): the input is a whole ring file.
 * It is copied into a heap buffer of exactly its size, so that AddressSanitizer reports any read
 * past the file. When validation succeeds, the target touches everything a consumer would reach
 * through the returned geometry: every slot's header and state word, the last byte of its labels,
 * indices and status arrays and of its pixels, the stream state and liveness words, both queues'
 * trailers, one stoke_queue_poll on each queue and a stoke_queue_offer on the free queue (a
 * consumer's release). An offset the validator let escape the file is
 * then a heap overflow; a misaligned atomic is reported by UndefinedBehaviorSanitizer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../stoke_ring.h"

static volatile uint8_t sink;

static void touch(const uint8_t *p) { sink ^= *(const volatile uint8_t *)p; }

static void touch_queue(uint8_t *base, const stoke_geometry *g, int64_t offset, int offer) {
    stoke_queue q = { base + offset, g->queue_capacity, g->slot_count };
    touch(q.buf);
    touch(q.buf + g->queue_capacity + STOKE_QUEUE_TRAILER_LENGTH - 1); /* the trailer's last byte */
    int32_t slot = stoke_queue_poll(&q);
    if (slot < -2 || slot >= g->slot_count) abort(); /* poll's contract: -1, -2 or a slot number */
    if (offer) {
        /* what a consumer's release does to the free queue: writes inside the queue only */
        int rc = stoke_queue_offer(&q, slot >= 0 ? slot : 0);
        if (rc != 0 && rc != -1) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *ring = malloc(size ? size : 1);
    if (ring == NULL) return 0;
    memcpy(ring, data, size);
    stoke_geometry g;
    char err[256];
    if (stoke_ring_validate(ring, (int64_t)size, &g, err, sizeof err) == 0) {
        if (g.total_length > (int64_t)size) abort(); /* validate's contract */
        sink ^= (uint8_t)stoke_ring_stream(ring);
        sink ^= (uint8_t)stoke_producer_pid(ring);
        sink ^= (uint8_t)stoke_producer_heartbeat(ring);
        int64_t S = g.samples_per_slot;
        for (int32_t s = 0; s < g.slot_count; s++) {
            uint8_t *slot = ring + g.slots_offset + (int64_t)s * g.slot_stride;
            for (int i = 0; i < STOKE_SLOT_HEADER_LENGTH; i++) touch(slot + i);
            sink ^= (uint8_t)stoke_slot_state(slot);
            touch(slot + g.labels_offset + 4 * S - 1);
            touch(slot + g.indices_offset + 8 * S - 1);
            touch(slot + g.status_offset + 4 * S - 1);
            touch(slot + g.pixels_offset + g.sample_bytes * S - 1);
            touch(slot + g.slot_stride - 1);
        }
        touch_queue(ring, &g, g.ready_queue_offset, 0);
        touch_queue(ring, &g, g.free_queue_offset, 1);
    } else if (err[0] == '\0') {
        abort(); /* a refusal always says why */
    }
    free(ring);
    return 0;
}
