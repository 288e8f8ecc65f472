/*
 * stoke_hash.h: the restart cache's content hash (loader/.../cache/CacheEntry.lanes) in C, bit for
 * bit: the entries on disk store it, so both sides must agree on every byte of every entry ever
 * written. Java keeps its own loop, the reference, for a build without this library.
 *
 * The caller (Java) checks the extent first: this function trusts its arguments, keeps no state
 * and allocates nothing.
 */
#ifndef STOKE_HASH_H
#define STOKE_HASH_H

#include <stdint.h>

#define STOKE_HASH_ABI_VERSION 2

/* The ABI version of this function (Java refuses a library of another version). */
int32_t stoke_hash_abi_version(void);

/*
 * The hash of src[offset, offset + length) mixed into seed, in four lanes. With
 * h = seed ^ (length * 0x9E3779B97F4A7C15) and L = 0xD6E8FEB86659FD93, lane j starts at h ^ (j * L).
 * The 8-byte words w are read in the host's byte order (as Java's JAVA_LONG_UNALIGNED reads them;
 * little-endian where Stoke runs). Each whole 32 bytes, lane j takes its word: hj = mix(hj ^ w).
 * The words left (0 to 3) go to lane 0 in turn, then h0 = mix(h0 ^ tail), the last length % 8
 * bytes little-endian (0 when none). The hash is mix(h0 ^ mix(h1 ^ mix(h2 ^ mix(h3)))). mix is
 * SplitMix64's finaliser. Arithmetic is modulo 2^64, as Java's long.
 */
int64_t stoke_hash(int64_t seed, const uint8_t *src, int64_t offset, int64_t length);

#endif
