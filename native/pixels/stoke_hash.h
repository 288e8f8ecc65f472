/*
 * stoke_hash.h: the restart cache's content hash (loader/.../cache/CacheEntry.hash) in C, bit for
 * bit: the entries on disk store it, so both sides must agree on every byte of every entry ever
 * written. Java keeps its own loop, the reference, for short hashes (keys, headers) and for a
 * build without this library.
 *
 * The caller (Java) checks the extent first: this function trusts its arguments, keeps no state
 * and allocates nothing.
 */
#ifndef STOKE_HASH_H
#define STOKE_HASH_H

#include <stdint.h>

#define STOKE_HASH_ABI_VERSION 1

/* The ABI version of this function (Java refuses a library of another version). */
int32_t stoke_hash_abi_version(void);

/*
 * The hash of src[offset, offset + length) mixed into seed: h = seed ^ (length * 0x9E3779B97F4A7C15),
 * then h = mix(h ^ w) for each whole 8-byte word w read in the host's byte order (as Java's
 * JAVA_LONG_UNALIGNED reads it; little-endian where Stoke runs), then mix(h ^ tail), the
 * last length % 8 bytes little-endian (0 when none); mix is SplitMix64's finaliser. Arithmetic is
 * modulo 2^64, as Java's long.
 */
int64_t stoke_hash(int64_t seed, const uint8_t *src, int64_t offset, int64_t length);

#endif
