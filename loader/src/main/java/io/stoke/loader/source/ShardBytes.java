package io.stoke.loader.source;

import java.lang.foreign.MemorySegment;

/**
 * The whole bytes of each of a dataset's shards, by shard number: tar files mapped where they lie
 * ({@link MappedShards}), downloads held in the bounded shard cache, or another {@link ShardFormat}'s
 * loaded units (a Parquet row group's decompressed image pages). Readers take a shard with
 * {@link #acquire} and give it back with {@link #release}; between the two its bytes stay valid.
 * Thread-safe.
 */
public interface ShardBytes extends AutoCloseable {
    /** Shard {@code shard}'s bytes, valid until the matching {@link #release}; may block while it is fetched. */
    MemorySegment acquire(int shard);

    /** Whether the shards come from a remote store (fetched whole into the bounded shard cache) rather than local files. */
    default boolean remote() {
        return false;
    }

    /**
     * Shard {@code shard}'s bytes if they are loaded now, as {@link #acquire} (to be given back with
     * {@link #release}); null, at once, when they would have to be fetched or loaded first. For a
     * reader that wants a shard only while others hold it anyway (the restart cache's filler), so
     * that it never fetches a shard a second time. Mapped shards are always there.
     */
    default MemorySegment acquireIfLoaded(int shard) {
        return acquire(shard);
    }

    /**
     * A word that changes whenever shard {@code shard}'s bytes can have: a file's size and
     * modification time, an object's ETag (with, for a format's unit, its place in its file, the
     * columns read, and which of its rows a table's snapshot deleted). 0 when it is not known (yet): an object whose store gave no ETag. The restart
     * cache names a member by it with the member's place in the shard, so that it never serves a
     * copy of another version; it is read once per sample, so it is computed once per shard.
     */
    default long version(int shard) {
        return 0;
    }

    /** A {@link #version} from an object's ETag; 0 for none. */
    static long versionOf(String etag) {
        if (etag == null) {
            return 0;
        }
        long h = 0x6554_6167_5665_7273L;
        for (int i = 0; i < etag.length(); i++) {
            h = (h ^ etag.charAt(i)) * 0x100_0000_01B3L;
        }
        return mix(h) | 1; // never 0
    }

    /** A {@link #version} from a file's size and modification time. */
    static long versionOf(long size, long mtimeNanos) {
        return mix(mix(size) ^ mtimeNanos * 0x9E3779B97F4A7C15L) | 1;
    }

    /** A {@link #version} of {@code base} mixed with more words (a unit's place, the columns read). */
    static long versionWith(long base, long more) {
        return base == 0 ? 0 : mix(base ^ mix(more)) | 1;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Ends one {@link #acquire} of {@code shard}. */
    void release(int shard);

    /** The shard's size in bytes, without reading it. */
    long size(int shard);

    /** The shard's version as its store names it (an object's ETag), when known; null for files. */
    default String etag(int shard) {
        return null;
    }

    /** Unmaps or frees every shard; no segment handed out stays valid. */
    @Override
    void close();
}
