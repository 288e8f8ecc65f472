/*
 * stoke_hash.c: see stoke_hash.h. Each lane is a serial chain (each mix takes the one before), so
 * one chain is bound by the latency of mix's two multiplications, about 12 cycles a word; four
 * independent lanes keep the multiplier busy, 3.7 times the words a second (4.7 against 17.7 us
 * for a 45 KB entry on the 2-core AMD EPYC VM, docs/benchmarks/results-filling/hit-bound-summary.md).
 * It also runs without the bounds and liveness checks of a MemorySegment accessor, which the
 * producer's C1-compiled code does not remove.
 */
#include "stoke_hash.h"

#include <string.h>

int32_t stoke_hash_abi_version(void)
{
  return STOKE_HASH_ABI_VERSION;
}

/* What sets lane j's start apart: seed ^ (length * golden) ^ (j * LANE). */
#define LANE UINT64_C(0xD6E8FEB86659FD93)

static inline uint64_t mix(uint64_t z)
{
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Eight bytes as Java's JAVA_LONG_UNALIGNED reads them: in the host's own byte order. */
static inline uint64_t word(const uint8_t *p)
{
  uint64_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

int64_t stoke_hash(int64_t seed, const uint8_t *src, int64_t offset, int64_t length)
{
  const uint8_t *p = src + offset;
  uint64_t n = (uint64_t)length;
  uint64_t h = (uint64_t)seed ^ (n * UINT64_C(0x9E3779B97F4A7C15));
  uint64_t h0 = h, h1 = h ^ LANE, h2 = h ^ (2 * LANE), h3 = h ^ (3 * LANE);
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    h0 = mix(h0 ^ word(p + i));
    h1 = mix(h1 ^ word(p + i + 8));
    h2 = mix(h2 ^ word(p + i + 16));
    h3 = mix(h3 ^ word(p + i + 24));
  }
  for (; i + 8 <= n; i += 8) {
    h0 = mix(h0 ^ word(p + i));
  }
  uint64_t tail = 0;
  for (unsigned shift = 0; i < n; i++, shift += 8) {
    tail |= (uint64_t)p[i] << shift;
  }
  h0 = mix(h0 ^ tail);
  return (int64_t)mix(h0 ^ mix(h1 ^ mix(h2 ^ mix(h3))));
}
