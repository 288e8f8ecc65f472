package io.stoke.remote;

import io.stoke.loader.source.ShardBytes;
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
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

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
public final class RemoteShards implements ShardBytes {
    private final ObjectStore store;
    private final List<String> urls;
    private final long[] sizes;
    private final String index; // where sizes came from, when not from HEAD requests
    private final AtomicReferenceArray<String> etags; // each shard's version once known, checked on every fetch
    private final long capacity;
    private final Path folder;
    private final Entry[] entries;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private long used;
    private long clock;
    private long fetchedBytes;
    private int fetches;
    private boolean closed;

    /** One shard in the cache: being fetched, ready, or failed. */
    private static final class Entry {
        final Arena arena = Arena.ofShared();
        final long size;
        MemorySegment bytes;
        Path file;
        boolean ready;
        RuntimeException failure;
        int holders;
        long lastUse;

        Entry(long size) {
            this.size = size;
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
        this.store = store;
        this.urls = List.copyOf(urls);
        this.sizes = sizes.clone();
        this.capacity = capacity;
        this.folder = folder;
        this.index = index;
        this.etags = new AtomicReferenceArray<>(etags);
        this.entries = new Entry[urls.size()];
    }

    @Override
    public boolean remote() {
        return true;
    }

    @Override
    public MemorySegment acquire(int shard) {
        Entry mine;
        lock.lock();
        try {
            while (true) {
                if (closed) {
                    throw new IllegalStateException("shard cache closed");
                }
                Entry e = entries[shard];
                if (e != null && e.failure != null) {
                    throw e.failure;
                }
                if (e != null && e.ready) {
                    e.holders++;
                    e.lastUse = ++clock;
                    return e.bytes;
                }
                if (e == null && makeRoom(sizes[shard])) {
                    mine = new Entry(sizes[shard]);
                    mine.holders = 1;
                    entries[shard] = mine;
                    used += mine.size;
                    break;
                }
                changed.awaitUninterruptibly(); // another reader is fetching it, or the cache is full of held shards
            }
        } finally {
            lock.unlock();
        }
        return fetch(shard, mine);
    }

    @Override
    public long size(int shard) {
        return sizes[shard];
    }

    @Override
    public String etag(int shard) {
        return etags.get(shard);
    }

    /** Fetches outside the lock, so that readers of other shards go on. */
    private MemorySegment fetch(int shard, Entry e) {
        RuntimeException failure = null;
        try {
            e.bytes = allocate(shard, e);
            String read = store.read(urls.get(shard), e.bytes, etags.get(shard));
            // Pinned from the first fetch on: a shard rewritten between two fetches of one run (after an
            // eviction) is named, never read as another version of itself.
            etags.compareAndSet(shard, null, read);
        } catch (RuntimeException x) {
            if (x instanceof ShardFetchException f && f.changed() && index != null) {
                String what = f.storeSize() >= 0
                        ? sizes[shard] + " bytes, the store has " + f.storeSize()
                        : "ETag " + etags.get(shard) + ", the store has " + f.storeEtag();
                failure = new ShardFetchException(
                        urls.get(shard),
                        "the index " + index + " says " + what
                                + ": the index is stale (the shard was written again after it was indexed);"
                                + " run `stoke index` on the shards again",
                        f);
            } else {
                failure = x instanceof ShardFetchException
                        ? x
                        : new ShardFetchException(urls.get(shard), "cannot cache the shard: " + x.getMessage(), x);
            }
        }
        lock.lock();
        try {
            if (failure != null) {
                e.failure = failure;
                e.holders = 0;
                release(e);
                changed.signalAll();
                throw failure;
            }
            e.ready = true;
            e.lastUse = ++clock;
            fetchedBytes += e.size;
            fetches++;
            changed.signalAll();
            return e.bytes;
        } finally {
            lock.unlock();
        }
    }

    private MemorySegment allocate(int shard, Entry e) {
        if (e.size == 0) {
            return MemorySegment.NULL.reinterpret(0);
        }
        if (folder == null) {
            return e.arena.allocate(e.size, 4096);
        }
        e.file = folder.resolve(String.format("shard-%08d.tar.part", shard));
        try (FileChannel ch = FileChannel.open(
                e.file,
                StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, e.size, e.arena);
        } catch (IOException x) {
            throw new UncheckedIOException("cannot create " + e.file + " in the shard cache", x);
        }
    }

    /** Evicts unheld shards, least recently used first, until {@code bytes} more fit; false if they cannot yet. */
    private boolean makeRoom(long bytes) {
        while (used + bytes > capacity) {
            int victim = -1;
            for (int s = 0; s < entries.length; s++) {
                Entry e = entries[s];
                if (e != null && e.ready && e.holders == 0 && (victim < 0 || e.lastUse < entries[victim].lastUse)) {
                    victim = s;
                }
            }
            if (victim < 0) {
                return false;
            }
            Entry e = entries[victim];
            entries[victim] = null;
            release(e);
        }
        return true;
    }

    /** Frees an entry's memory or file (under the lock, with no holder left). */
    private void release(Entry e) {
        used -= e.size;
        e.arena.close();
        if (e.file != null) {
            try {
                Files.deleteIfExists(e.file);
            } catch (IOException ignored) {
                // a leftover .part file in the cache folder; the next run truncates it
            }
        }
    }

    @Override
    public void release(int shard) {
        lock.lock();
        try {
            Entry e = entries[shard];
            if (e != null && e.holders > 0) {
                e.holders--;
                if (e.holders == 0) {
                    changed.signalAll();
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Shards fetched so far (a shard evicted and needed again counts twice). */
    public int fetches() {
        lock.lock();
        try {
            return fetches;
        } finally {
            lock.unlock();
        }
    }

    /** Bytes fetched so far. */
    public long fetchedBytes() {
        lock.lock();
        try {
            return fetchedBytes;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (int s = 0; s < entries.length; s++) {
                Entry e = entries[s];
                if (e != null && (e.ready || e.failure != null)) {
                    entries[s] = null;
                    if (e.ready) {
                        release(e);
                    }
                }
            }
            changed.signalAll();
        } finally {
            lock.unlock();
            store.close();
        }
    }
}
