package io.stoke.loader.source;

import java.lang.foreign.MemorySegment;

/**
 * The whole bytes of each of a dataset's shards, by shard number: tar files mapped where they lie
 * ({@link MappedShards}), downloads held in a bounded cache, or another {@link ShardFormat}'s
 * loaded units (a Parquet row group's decompressed image pages). Readers take a shard with
 * {@link #acquire} and give it back with {@link #release}; between the two its bytes stay valid.
 * Thread-safe.
 */
public interface ShardBytes extends AutoCloseable {
    /** Shard {@code shard}'s bytes, valid until the matching {@link #release}; may block while it is fetched. */
    MemorySegment acquire(int shard);

    /** Whether the shards come from a remote store (fetched whole into a bounded cache) rather than local files. */
    default boolean remote() {
        return false;
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
