/*
 * stoke_consumer: an example consumer of a Stoke ring, in C, built against stoke_ring.h only.
 *
 *   gcc -O2 -o stoke_consumer stoke_consumer.c
 *   ./stoke_consumer /dev/shm/NAME [--hold-after N]
 *
 * Prints one line per batch and per sample (the tests compare them with the producer's data):
 *   B <sequence> <epoch> <batch index> <samples>
 *   S <sequence> <dataset index> <label> <status> <crc32 of the sample's pixels, hex>
 *   END                     after the last batch
 *   ERROR <message>         and exit status 3 when the ring is invalid or the producer is gone
 * --hold-after N: after N batches, take one more, print HOLDING <sequence>, and never release it
 * (the tests kill the process there, to check that the batch is delivered again).
 */
#define _GNU_SOURCE
#include "stoke_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32(const uint8_t *p, int64_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (int64_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static int64_t now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Monotonic nanoseconds, for the wait per batch the producer's auto workers read. */
static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int fail(const char *msg) {
    printf("ERROR %s\n", msg);
    fflush(stdout);
    return 3;
}

/* NULL when the producer is fine, else why not. */
static const char *producer_problem(uint8_t *base) {
    if (stoke_ring_stream(base) == STOKE_STATE_PRODUCER_FAILED) return "the producer reported a failure";
    int64_t pid = stoke_producer_pid(base);
    if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) return "the producer is gone";
    if (now_ms() - stoke_producer_heartbeat(base) > STOKE_PRODUCER_TIMEOUT_MILLIS)
        return "the producer's heartbeat stopped";
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s RING [--hold-after N]\n", argv[0]);
        return 2;
    }
    long hold_after = -1;
    if (argc >= 4 && strcmp(argv[2], "--hold-after") == 0) hold_after = atol(argv[3]);
    crc_init();

    /* A named ring is opened as only its owner could have made it (stoke_ring.h, step 1): never
     * through a link, never waiting on a FIFO, then checked on the descriptor. An inherited
     * descriptor (/dev/fd/N) is itself a link, and no other user can reach it. */
    const char *path = argv[1];
    int inherited = strncmp(path, "/dev/fd/", 8) == 0 || strncmp(path, "/proc/self/fd/", 14) == 0;
    int fd = open(path, O_RDWR | O_CLOEXEC | (inherited ? 0 : O_NOFOLLOW | O_NONBLOCK));
    char m[768];
    if (fd < 0 && errno == ELOOP) {
        char target[256] = "?";
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n >= 0) target[n] = 0;
        snprintf(m, sizeof m, "refusing the ring %s: it is a symbolic link (to %s), and a ring is never opened through one",
                 path, target);
        return fail(m);
    }
    if (fd < 0) { snprintf(m, sizeof m, "cannot open %s: %s", path, strerror(errno)); return fail(m); }
    struct stat st;
    if (fstat(fd, &st) != 0) return fail("cannot stat the ring");
    if (!inherited && !S_ISREG(st.st_mode)) {
        snprintf(m, sizeof m, "refusing the ring %s: it is not a regular file (mode %o), owned by uid %u", path,
                 (unsigned)st.st_mode, (unsigned)st.st_uid);
        return fail(m);
    }
    if (!inherited && (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)) {
        snprintf(m, sizeof m, "refusing the ring %s: it is owned by uid %u with mode %04o, and a ring must be owned by "
                 "this process's user (uid %u) and writable by no one else", path, (unsigned)st.st_uid,
                 (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
        return fail(m);
    }
    if (st.st_size < STOKE_HEADER_LENGTH) return fail("file is too short for a ring header: truncated or not a Stoke ring");
    uint8_t *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return fail("mmap failed");

    stoke_geometry g;
    char err[256];
    if (stoke_ring_validate(base, st.st_size, &g, err, sizeof err) != 0) return fail(err);
    const char *problem = producer_problem(base);
    if (problem) return fail(problem);

    /* Take the consumer seat, under an fcntl write lock on byte 0 (every consumer takes it). */
    int64_t self = getpid();
    int64_t deadline = now_ms() + 10000;
    for (;;) {
        int64_t expected = 0;
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
        if (fcntl(fd, F_SETLKW, &fl) != 0) return fail("cannot lock the ring file");
        int won = stoke_consumer_seat_cas(base, &expected, self);
        fl.l_type = F_UNLCK;
        fcntl(fd, F_SETLK, &fl);
        if (won) break;
        if (expected > 0 && kill((pid_t)expected, 0) == 0) return fail("another consumer is attached");
        if (now_ms() > deadline) return fail("the previous consumer's seat was not reclaimed in time");
        if ((problem = producer_problem(base)) != NULL) return fail(problem);
        usleep(5000);
    }

    close(fd);
    stoke_queue ready = { base + g.ready_queue_offset, g.queue_capacity, g.slot_count };
    stoke_queue free_q = { base + g.free_queue_offset, g.queue_capacity, g.slot_count };
    long taken = 0;
    int64_t last_check = 0;
    int64_t wait_start = -1; /* when this batch's first poll failed to find one, or -1 */
    for (;;) {
        if (wait_start < 0) wait_start = now_ns();
        int32_t slot = stoke_queue_poll(&ready);
        if (slot == -2) return fail("the ready queue is corrupt (a slot number out of range or a misplaced record)");
        if (slot < 0) {
            if (stoke_ring_stream(base) == STOKE_STATE_END_OF_STREAM) {
                /* The acquire above pairs with the producer's release after its last publish: this
                 * poll sees every batch published before the end. */
                slot = stoke_queue_poll(&ready);
                if (slot == -2) return fail("the ready queue is corrupt (a slot number out of range or a misplaced record)");
                if (slot < 0) break;
            } else {
                int64_t t = now_ms();
                if (t - last_check >= 10) {
                    last_check = t;
                    stoke_consumer_heartbeat(base, t);
                    if ((problem = producer_problem(base)) != NULL) return fail(problem);
                }
                continue; /* busy-spin: the lowest hand-off latency */
            }
        }
        uint8_t *s = base + g.slots_offset + g.slot_stride * slot;
        stoke_slot_set_state(s, STOKE_SLOT_STATE_HELD);
        stoke_consumed_add(base);
        stoke_consumer_wait_add(base, now_ns() - wait_start);
        wait_start = -1;
        int32_t n = STOKE_I32(s, STOKE_SLOT_SAMPLE_COUNT_OFFSET);
        if (n < 0 || n > g.samples_per_slot) return fail("slot claims more samples than it holds");
        int64_t seq = STOKE_I64(s, STOKE_SLOT_SEQUENCE_OFFSET);
        printf("B %lld %lld %lld %d\n", (long long)seq, (long long)STOKE_I64(s, STOKE_SLOT_EPOCH_OFFSET),
               (long long)STOKE_I64(s, STOKE_SLOT_BATCH_INDEX_OFFSET), n);
        for (int32_t i = 0; i < n; i++) {
            const uint8_t *px = s + g.pixels_offset + g.sample_bytes * i;
            printf("S %lld %lld %d %d %08x\n", (long long)seq, (long long)STOKE_I64(s, g.indices_offset + 8 * i),
                   STOKE_I32(s, g.labels_offset + 4 * i), STOKE_I32(s, g.status_offset + 4 * i),
                   crc32(px, g.sample_bytes));
        }
        if (hold_after >= 0 && taken == hold_after) {
            printf("HOLDING %lld\n", (long long)seq);
            fflush(stdout);
            for (;;) pause();
        }
        fflush(stdout);
        taken++;
        stoke_slot_set_state(s, STOKE_SLOT_STATE_FREE); /* before the offer: the producer may take it then */
        if (stoke_queue_offer(&free_q, slot) != 0) return fail("the free queue is full or corrupt");
    }
    printf("END\n");
    fflush(stdout);
    stoke_consumer_leave(base, self);
    munmap(base, (size_t)st.st_size);
    return 0;
}
