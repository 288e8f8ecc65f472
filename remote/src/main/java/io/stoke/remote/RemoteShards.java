package io.stoke.remote;

import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.shardcache.BoundedShardCache;
import io.stoke.loader.source.ShardBytes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Remote shards behind a bounded cache: a shard is fetched whole (the store's parallel ranged GETs,
 * never a request per sample) the first time a reader needs it, and stays while the cache has
 * room; the least recently used shard that no reader holds makes way for the next. The cache is
 * memory ({@code folder == null}) or files in a folder, mapped like local shards, which every rank
 * and job on the node that names the folder shares ({@link ShardFolder}: one fetch of a shard for
 * all of them, each file named by the shard's URL and version); either way this cache's own
 * bytes never pass {@code capacity}: a reader that needs a shard while every byte is held waits
 * for a release. A reader holds a shard only while it decodes one sample (never while it waits,
 * here or for a ring slot), so every wait ends; twice the largest shard is the minimum, so that
 * one shard can be fetched while another is read, and a shuffle window's worth of shards avoids
 * fetching a shard twice per epoch.
 *
 * <p>A shard whose fetch failed after the store's retries fails every later acquire of it with
 * the same error: the epoch stops, naming the URL, rather than coming up short.
 */
final class RemoteShards extends BoundedShardCache<RemoteShards.Entry> {
    private final ObjectStore store;
    private final List<String> urls;
    private final long[] sizes;
    private final String catalog; // the shard catalog sizes came from, when not from HEAD requests
    private final AtomicReferenceArray<String> etags; // each shard's version once known, checked on every fetch
    private final AtomicReferenceArray<String> modified; // Last-Modified, where known: names a shard without an ETag
    private final AtomicReferenceArray<Boolean> asked; // whether a HEAD was sent for a version the catalog lacked
    private final ShardFolder folder;
    private long fetchedBytes; // guarded by this
    private int fetches;
    private int found;

    /**
     * One shard in the cache: its memory, or its file in the cache folder. Public only as the type
     * the cache's protected methods name; nothing of it is open outside this package.
     */
    public static final class Entry extends BoundedShardCache.Entry {
        final Arena arena = Arena.ofShared();
        ShardFolder.Mapped mapped;

        Entry(long size) {
            super(size);
        }
    }

    /**
     * @param sizes    each shard's size in bytes ({@link ObjectStore#size}), by shard number
     * @param capacity bytes the cache may hold, at least twice the largest shard
     * @param folder   where fetched shards are kept as files (0600 in a folder of 0700), or null to keep
     *                 them in memory
     */
    public RemoteShards(ObjectStore store, List<String> urls, long[] sizes, long capacity, Path folder) {
        this(
                store,
                urls,
                sizes,
                new String[sizes.length],
                new String[sizes.length],
                capacity,
                folder,
                FolderAccess.PRIVATE,
                null);
    }

    /**
     * Shards whose versions are known before they are fetched, and where {@code catalog} is not null,
     * whose sizes come from that shard catalog rather than from HEAD requests: a shard of another size
     * in the store is named as a stale catalog when it is fetched.
     *
     * @param etags    each shard's ETag, or null where not known (yet)
     * @param modified each shard's Last-Modified time, or null: with its size, what names the file of a
     *                 shard without an ETag in {@code folder}
     * @param access   who may use {@code folder} ({@link FolderAccess#PRIVATE}, or a group's)
     * @throws UncheckedIOException {@code folder} cannot be made, or is refused ({@link
     *     io.stoke.loader.internal.CacheFolder}: another user's, or one others can write)
     */
    public RemoteShards(
            ObjectStore store,
            List<String> urls,
            long[] sizes,
            String[] etags,
            String[] modified,
            long capacity,
            Path folder,
            FolderAccess access,
            String catalog) {
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
        this.catalog = catalog;
        this.etags = new AtomicReferenceArray<>(etags);
        this.modified = new AtomicReferenceArray<>(modified);
        this.asked = new AtomicReferenceArray<>(sizes.length);
        try {
            this.folder = folder == null ? null : new ShardFolder(folder, access);
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
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

    /** The shard's ETag, from the shard catalog or pinned by its first fetch; 0 before then, or when the store gives none. */
    @Override
    public long version(int shard) {
        return ShardBytes.versionOf(etags.get(shard));
    }

    /** Fetches the whole shard, outside the cache's lock. */
    @Override
    protected MemorySegment load(int shard, Entry e) {
        try {
            if (folder == null) {
                MemorySegment bytes =
                        e.size() == 0 ? MemorySegment.NULL.reinterpret(0) : e.arena.allocate(e.size(), 4096);
                fetch(shard, bytes);
                return bytes;
            }
            e.mapped = folder.map(urls.get(shard), e.size(), folderVersion(shard), e.arena, dst -> fetch(shard, dst));
            return e.mapped.bytes;
        } catch (IOException x) {
            throw new ShardFetchException(Urls.redact(urls.get(shard)), "cannot cache the shard: " + x.getMessage(), x);
        } catch (RuntimeException x) {
            if (x instanceof ShardFetchException f && f.changed() && catalog != null) {
                String what = f.storeSize() >= 0
                        ? sizes[shard] + " bytes, the store has " + f.storeSize()
                        : "ETag " + etags.get(shard) + ", the store has " + f.storeEtag();
                throw new ShardFetchException(
                        urls.get(shard),
                        "the shard catalog " + catalog + " says " + what
                                + ": the catalog is stale (the shard was written again after it was catalogued);"
                                + " run `stoke catalog` on the shards again",
                        f);
            }
            if (x instanceof ShardFetchException f && f.notFound() && catalog != null) {
                throw ShardFetchException.goneSinceCatalogued(
                        urls.get(shard), "the shard catalog " + catalog, "shards", f);
            }
            throw x instanceof ShardFetchException
                    ? x
                    : new ShardFetchException(urls.get(shard), "cannot cache the shard: " + x.getMessage(), x);
        }
    }

    private void fetch(int shard, MemorySegment dst) {
        String read = store.read(urls.get(shard), dst, etags.get(shard));
        // Pinned from the first fetch on: a shard rewritten between two fetches of one run (after an
        // eviction) is named, never read as another version of itself.
        etags.compareAndSet(shard, null, read);
    }

    /**
     * What names the shard's file in the shared folder: its ETag, or its size and Last-Modified time;
     * null where the store names no version (the file is then this process's own). A shard opened
     * from a shard catalog that carries no ETag is asked once (a HEAD) before its first fetch.
     */
    private String folderVersion(int shard) {
        if (etags.get(shard) == null && modified.get(shard) == null && asked.compareAndSet(shard, null, true)) {
            ObjectStore.Stat stat = store.stat(urls.get(shard));
            if (stat.size() == sizes[shard]) { // else the fetch names the shard as changed (a stale catalog)
                etags.compareAndSet(shard, null, stat.etag());
                modified.compareAndSet(shard, null, stat.lastModified());
            }
        }
        String etag = etags.get(shard);
        if (etag != null) {
            return "etag " + etag + " size " + sizes[shard];
        }
        String time = modified.get(shard);
        return time == null ? null : "size " + sizes[shard] + " modified " + time;
    }

    @Override
    protected String describe(int shard) {
        return Urls.redact(urls.get(shard));
    }

    @Override
    protected synchronized void loaded(Entry e) {
        if (e.mapped != null && !e.mapped.fetched) {
            found++; // fetched by another process (or an earlier run), mapped from the folder
            return;
        }
        fetchedBytes += e.size();
        fetches++;
    }

    /** Frees an entry's memory, or unmaps its file and removes it where no other process maps it. */
    @Override
    protected void free(Entry e) {
        try {
            e.arena.close();
        } finally {
            // Also where the arena refuses to close (a thread still reads the shard in a native call
            // as the process stops): the file's hold goes, and the last process out removes the file,
            // while this process's mapping stays valid until it exits.
            if (e.mapped != null) {
                folder.release(e.mapped);
                e.mapped = null;
            }
        }
    }

    /**
     * Shards fetched from the store so far (a shard evicted and needed again counts twice); not those
     * found in the shard cache's folder, fetched there by another process ({@link #found}).
     */
    public synchronized int fetches() {
        return fetches;
    }

    /** Bytes fetched from the store so far. */
    public synchronized long fetchedBytes() {
        return fetchedBytes;
    }

    /** Shards mapped from the folder as another process (or an earlier run) fetched them, not fetched here. */
    public synchronized int found() {
        return found;
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
