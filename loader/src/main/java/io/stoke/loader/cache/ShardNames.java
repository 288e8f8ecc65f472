package io.stoke.loader.cache;

import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.ShardBytes;
import io.stoke.loader.source.Shards;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * How a {@link RestartCache} names the members of a dataset's shards ({@link OriginalId}): the
 * shard's name (a URL, or a local path made absolute; a Parquet file and row group), the member's
 * length, its offset in the shard, and the shard's version, or a hash of the member's bytes where
 * the store gave no version. A URL is named {@link Urls#withoutQuery without its query string},
 * which an entry's header would otherwise carry to every later reader of the folder (a presigned
 * URL's signature): two URLs that differ only in their query are one object to the cache, and the
 * version (its ETag, else the member's bytes) is what tells two of its versions apart. Each shard's name is encoded once, on first use, and shared by every
 * thread, so naming a sample allocates nothing.
 */
final class ShardNames {
    /** Mixed into a member's hash where it stands for the version, so that neither is taken for the other. */
    private static final long CONTENT = 0x436F_6E74_656E_7448L;

    private final Shards shards;
    private final AtomicReferenceArray<MemorySegment> names;

    ShardNames(Shards shards) {
        this.shards = shards;
        this.names = new AtomicReferenceArray<>(shards.shardCount());
    }

    Shards shards() {
        return shards;
    }

    /**
     * A URL without its query; a local shard's path made absolute, so that one shard named from two
     * working directories, or as a relative and an absolute path, is one original to the cache.
     */
    static String nameOf(String shardName) {
        return shardName.contains("://") // s3://, http(s)://, gs://, hf://: a store's object, not a path
                ? Urls.withoutQuery(shardName)
                : Path.of(shardName).toAbsolutePath().toString();
    }

    /** Sets {@code id} to the member at {@code offset} in {@code shard}, whose bytes, read, are {@code bytes}. */
    void identify(OriginalId id, int shard, long offset, MemorySegment bytes, long length) {
        MemorySegment name = names.get(shard);
        if (name == null) {
            name = MemorySegment.ofArray(nameOf(shards.shardName(shard)).getBytes(StandardCharsets.UTF_8));
            names.set(shard, name); // the same bytes whoever sets it first
        }
        ShardBytes store = shards.bytes();
        long version = store.version(shard);
        if (version == 0) {
            version = CacheEntry.contentHash(CONTENT, bytes, 0, length);
        }
        id.set(name, 0, (int) name.byteSize(), length, offset, version);
    }
}
