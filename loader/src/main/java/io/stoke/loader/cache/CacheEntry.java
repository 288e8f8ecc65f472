package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import io.stoke.ffm.StokeHash;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The layout of one entry of a {@link RestartCache}, drawn once: a header that names the original
 * it was made from ({@link OriginalId}: a file's path as the dataset holds it, its size and
 * modification time; or a shard's name, the member's length, its offset and the shard's version)
 * and checks its content, then the name, then the content (the lossless copy, or nothing when the
 * original is to be read as it is). Little-endian.
 *
 * <pre>
 *  0  magic            8  "STKRSTC2" ({@link #FORMER_MAGIC}, "STKRSTC1": an earlier Stoke's)
 *  8  kind             4  {@link #COPY} or {@link #ORIGINAL}
 * 12  name length      4  (the path's, or the shard's)
 * 16  original size    8  (the file's, or the member's)
 * 24  first word       8  (mtime seconds, or the member's offset in its shard)
 * 32  second word      8  (mtime nanos, or the shard's version)
 * 40  content length   8
 * 48  content hash     8  {@link #lanes} of the content ({@link #contentHash} computes it)
 * 56  header hash      8  {@link #hash} of bytes [0, 56) and the path
 * 64  path, then content
 * </pre>
 */
final class CacheEntry {
    static final long MAGIC = 0x3243_5453_524B_5453L; // "STKRSTC2" read little-endian
    /**
     * The entries of a Stoke before the content hash ran in four lanes: the same layout, the content
     * hashed by {@link #hash}. Read as a miss and made again, not as damaged.
     */
    static final long FORMER_MAGIC = 0x3143_5453_524B_5453L; // "STKRSTC1"

    static final int COPY = 0;
    static final int ORIGINAL = 1;

    static final long KIND = 8;
    static final long PATH_LENGTH = 12;
    static final long SIZE = 16;
    static final long MTIME_SEC = 24;
    static final long MTIME_NSEC = 32;
    static final long CONTENT_LENGTH = 40;
    static final long CONTENT_HASH = 48;
    static final long HEADER_HASH = 56;
    static final int HEADER_BYTES = 64;

    private CacheEntry() {}

    /**
     * {@link #lanes}, computed by the pixel library's {@code stoke_hash} where it is loaded (the same
     * bits: entries written by either are read by the other) and by {@link #lanes} where it is not,
     * which is said once. For what is long: an entry's content (~45 KB for a 0.2 MP photograph),
     * hashed at every hit and every copy.
     *
     * @throws IndexOutOfBoundsException where {@code [offset, offset + length)} is not within {@code s}
     */
    static long contentHash(long seed, MemorySegment s, long offset, long length) {
        Objects.checkFromIndexSize(offset, length, s.byteSize());
        return NativeHash.LOADED ? StokeHash.hash(seed, s, offset, length) : lanes(seed, s, offset, length);
    }

    /**
     * A 64-bit hash of {@code s[offset, offset + length)} mixed into {@code seed}: eight bytes at a
     * time, then the tail; it allocates nothing. Not cryptographic: it tells a damaged or foreign
     * entry from a good one. For what is short (keys, headers), where a native call would cost more
     * than it saves.
     */
    static long hash(long seed, MemorySegment s, long offset, long length) {
        long h = seed ^ (length * 0x9E3779B97F4A7C15L);
        long i = 0;
        for (; i + 8 <= length; i += 8) {
            h = mix(h ^ s.get(JAVA_LONG_UNALIGNED, offset + i));
        }
        long tail = 0;
        for (int shift = 0; i < length; i++, shift += 8) {
            tail |= (s.get(JAVA_BYTE, offset + i) & 0xFFL) << shift;
        }
        return mix(h ^ tail);
    }

    /**
     * The content hash: {@link #hash}'s words in four independent lanes, 32 bytes a step, so that the
     * multiplier is not idle while one lane's mix completes (four chains hash 3.7 times the bytes a
     * second of one, which was 3% of a hit's CPU). Lane {@code j} starts at {@code seed ^ (length *
     * golden) ^ (j * LANE)}; the words left after the last whole step go to lane 0, then the tail;
     * the lanes are folded from the last. The definition, and {@code stoke_hash}'s reference
     * ({@code native/pixels/stoke_hash.h}).
     */
    static long lanes(long seed, MemorySegment s, long offset, long length) {
        long h = seed ^ (length * 0x9E3779B97F4A7C15L);
        long h0 = h;
        long h1 = h ^ LANE;
        long h2 = h ^ (2 * LANE);
        long h3 = h ^ (3 * LANE);
        long i = 0;
        for (; i + 32 <= length; i += 32) {
            h0 = mix(h0 ^ s.get(JAVA_LONG_UNALIGNED, offset + i));
            h1 = mix(h1 ^ s.get(JAVA_LONG_UNALIGNED, offset + i + 8));
            h2 = mix(h2 ^ s.get(JAVA_LONG_UNALIGNED, offset + i + 16));
            h3 = mix(h3 ^ s.get(JAVA_LONG_UNALIGNED, offset + i + 24));
        }
        for (; i + 8 <= length; i += 8) {
            h0 = mix(h0 ^ s.get(JAVA_LONG_UNALIGNED, offset + i));
        }
        long tail = 0;
        for (int shift = 0; i < length; i++, shift += 8) {
            tail |= (s.get(JAVA_BYTE, offset + i) & 0xFFL) << shift;
        }
        h0 = mix(h0 ^ tail);
        return mix(h0 ^ mix(h1 ^ mix(h2 ^ mix(h3))));
    }

    /** What sets the content hash's lanes apart ({@link #lanes}). */
    private static final long LANE = 0xD6E8FEB86659FD93L;

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Resolved once; a missing pixel library is said once, loudly, on standard error. */
    private static final class NativeHash {
        static final boolean LOADED = loads();

        private NativeHash() {}

        private static boolean loads() {
            if (StokeHash.available()) {
                return true;
            }
            System.err.println("stoke: WARNING: " + StokeHash.unavailableReason()
                    + "; the restart cache hashes its entries in Java instead (slower at every hit and copy).");
            return false;
        }
    }

    /** The key an original is filed under: its path bytes, size and modification time. */
    static long key(MemorySegment path, long offset, int length, long size, long sec, long nsec) {
        return mix(hash(mix(size) ^ mix(sec * 1_000_000_007L + nsec), path, offset, length));
    }

    /** The hash a header stores of itself and its path: {@code entry[0, 56)}, then the path. */
    static long headerHash(MemorySegment entry, int pathLength) {
        long h = hash(0x5374_6F6B_6543_6163L, entry, 0, HEADER_HASH);
        return hash(h, entry, HEADER_BYTES, pathLength);
    }

    static int kind(MemorySegment e) {
        return e.get(JAVA_INT_UNALIGNED, KIND);
    }

    static int pathLength(MemorySegment e) {
        return e.get(JAVA_INT_UNALIGNED, PATH_LENGTH);
    }

    static long contentLength(MemorySegment e) {
        return e.get(JAVA_LONG_UNALIGNED, CONTENT_LENGTH);
    }

    /**
     * Whether the header in {@code e} (at least {@link #HEADER_BYTES} plus its path) is whole and
     * names the original whose path is {@code path[offset, offset + length)} with this size and time.
     */
    static boolean names(MemorySegment e, MemorySegment path, long offset, int length, long size, long sec, long nsec) {
        return e.get(JAVA_LONG_UNALIGNED, 0) == MAGIC
                && pathLength(e) == length
                && e.get(JAVA_LONG_UNALIGNED, SIZE) == size
                && e.get(JAVA_LONG_UNALIGNED, MTIME_SEC) == sec
                && e.get(JAVA_LONG_UNALIGNED, MTIME_NSEC) == nsec
                && (kind(e) == COPY || kind(e) == ORIGINAL)
                && e.get(JAVA_LONG_UNALIGNED, HEADER_HASH) == headerHash(e, length)
                && MemorySegment.mismatch(e, HEADER_BYTES, HEADER_BYTES + length, path, offset, offset + length) == -1;
    }

    /** Writes a header and path into {@code e}; the content, if any, follows at {@code HEADER_BYTES + path}. */
    static void write(
            MemorySegment e,
            int kind,
            MemorySegment path,
            long offset,
            int length,
            long size,
            long sec,
            long nsec,
            long contentLength,
            long contentHash) {
        e.set(JAVA_LONG_UNALIGNED, 0, MAGIC);
        e.set(JAVA_INT_UNALIGNED, KIND, kind);
        e.set(JAVA_INT_UNALIGNED, PATH_LENGTH, length);
        e.set(JAVA_LONG_UNALIGNED, SIZE, size);
        e.set(JAVA_LONG_UNALIGNED, MTIME_SEC, sec);
        e.set(JAVA_LONG_UNALIGNED, MTIME_NSEC, nsec);
        e.set(JAVA_LONG_UNALIGNED, CONTENT_LENGTH, contentLength);
        e.set(JAVA_LONG_UNALIGNED, CONTENT_HASH, contentHash);
        MemorySegment.copy(path, offset, e, HEADER_BYTES, length);
        e.set(JAVA_LONG_UNALIGNED, HEADER_HASH, headerHash(e, length));
    }
}
