package io.stoke.remote;

import io.stoke.loader.source.BoundedShardCache;
import io.stoke.loader.source.ShardBytes;
import io.stoke.loader.source.Urls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Remote shards behind a bounded cache: a shard is fetched whole (the store's parallel ranged GETs,
 * never a request per sample) the first time a reader needs it, and stays while the cache has
 * room; the least recently used shard that no reader holds makes way for the next. The cache is
 * memory ({@code folder == null}) or files in a folder, mapped like local shards; either way its
 * bytes never pass {@code capacity}: a reader that needs a shard while every byte is held waits
 * for a release. A reader holds a shard only while it decodes one sample (never while it waits,
 * here or for a ring slot), so every wait ends; twice the largest shard is the minimum, so that
 * one shard can be fetched while another is read, and a shuffle window's worth of shards avoids
 * fetching a shard twice per epoch.
 *
 * <p>A shard whose fetch failed after the store's retries fails every later acquire of it with
 * the same error: the epoch stops, naming the URL, rather than coming up short.
 */
public final class RemoteShards extends BoundedShardCache<RemoteShards.Entry> {
    private final ObjectStore store;
    private final List<String> urls;
    private final long[] sizes;
    private final String index; // where sizes came from, when not from HEAD requests
    private final AtomicReferenceArray<String> etags; // each shard's version once known, checked on every fetch
    private final Path folder;
    private long fetchedBytes; // guarded by this
    private int fetches;

    /**
     * One shard in the cache: its memory, or its file in the cache folder. Public only as the type
     * the cache's protected methods name; nothing of it is open outside this package.
     */
    public static final class Entry extends BoundedShardCache.Entry {
        final Arena arena = Arena.ofShared();
        Path file;

        Entry(long size) {
            super(size);
        }
    }

    /**
     * @param sizes    each shard's size in bytes ({@link ObjectStore#size}), by shard number
     * @param capacity bytes the cache may hold, at least twice the largest shard
     * @param folder   where fetched shards are kept as files, or null to keep them in memory
     */
    public RemoteShards(ObjectStore store, List<String> urls, long[] sizes, long capacity, Path folder) {
        this(store, urls, sizes, new String[sizes.length], capacity, folder, null);
    }

    /**
     * Shards whose sizes come from the index named {@code index} rather than from HEAD requests: a
     * shard of another size in the store is named as a stale index when it is fetched.
     */
    public RemoteShards(
            ObjectStore store,
            List<String> urls,
            long[] sizes,
            String[] etags,
            long capacity,
            Path folder,
            String index) {
        long largest = 0;
        for (long s : sizes) {
            largest = Math.max(largest, s);
        }
        if (capacity < 2 * largest) {
            throw new IllegalArgumentException("--shard-cache of " + capacity
                    + " bytes is less than twice the largest shard (" + largest + " bytes): give it at least "
                    + 2 * largest + ", and a shuffle window's worth to fetch each shard once");
        }
        super(urls.size(), capacity);
        this.store = store;
        this.urls = List.copyOf(urls);
        this.sizes = sizes.clone();
        this.folder = folder;
        this.index = index;
        this.etags = new AtomicReferenceArray<>(etags);
    }

    @Override
    public boolean remote() {
        return true;
    }

    @Override
    protected Entry newEntry(int shard) {
        return new Entry(sizes[shard]);
    }

    @Override
    public long size(int shard) {
        return sizes[shard];
    }

    @Override
    public String etag(int shard) {
        return etags.get(shard);
    }

    /** The shard's ETag, from the index or pinned by its first fetch; 0 before then, or when the store gives none. */
    @Override
    public long version(int shard) {
        return ShardBytes.versionOf(etags.get(shard));
    }

    /** Fetches the whole shard, outside the cache's lock. */
    @Override
    protected MemorySegment load(int shard, Entry e) {
        try {
            MemorySegment bytes = allocate(shard, e);
            String read = store.read(urls.get(shard), bytes, etags.get(shard));
            // Pinned from the first fetch on: a shard rewritten between two fetches of one run (after an
            // eviction) is named, never read as another version of itself.
            etags.compareAndSet(shard, null, read);
            return bytes;
        } catch (RuntimeException x) {
            if (x instanceof ShardFetchException f && f.changed() && index != null) {
                String what = f.storeSize() >= 0
                        ? sizes[shard] + " bytes, the store has " + f.storeSize()
                        : "ETag " + etags.get(shard) + ", the store has " + f.storeEtag();
                throw new ShardFetchException(
                        urls.get(shard),
                        "the index " + index + " says " + what
                                + ": the index is stale (the shard was written again after it was indexed);"
                                + " run `stoke index` on the shards again",
                        f);
            }
            throw x instanceof ShardFetchException
                    ? x
                    : new ShardFetchException(urls.get(shard), "cannot cache the shard: " + x.getMessage(), x);
        }
    }

    @Override
    protected String describe(int shard) {
        return Urls.redact(urls.get(shard));
    }

    @Override
    protected synchronized void loaded(Entry e) {
        fetchedBytes += e.size();
        fetches++;
    }

    private MemorySegment allocate(int shard, Entry e) {
        if (e.size() == 0) {
            return MemorySegment.NULL.reinterpret(0);
        }
        if (folder == null) {
            return e.arena.allocate(e.size(), 4096);
        }
        e.file = folder.resolve(String.format("shard-%08d.tar.part", shard));
        try (FileChannel ch = FileChannel.open(
                e.file,
                StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, e.size(), e.arena);
        } catch (IOException x) {
            throw new UncheckedIOException("cannot create " + e.file + " in the shard cache", x);
        }
    }

    /** Frees an entry's memory or file. */
    @Override
    protected void free(Entry e) {
        e.arena.close();
        if (e.file != null) {
            try {
                Files.deleteIfExists(e.file);
            } catch (IOException ignored) {
                // a leftover .part file in the cache folder; the next run truncates it
            }
        }
    }

    /** Shards fetched so far (a shard evicted and needed again counts twice). */
    public synchronized int fetches() {
        return fetches;
    }

    /** Bytes fetched so far. */
    public synchronized long fetchedBytes() {
        return fetchedBytes;
    }

    @Override
    public void close() {
        try {
            super.close();
        } finally {
            store.close();
        }
    }
}
