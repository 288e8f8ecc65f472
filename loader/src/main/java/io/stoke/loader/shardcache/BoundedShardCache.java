package io.stoke.loader.shardcache;

import io.stoke.loader.source.ShardBytes;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Shards' bytes held in a cache of at most {@code capacity} bytes, each loaded the first time a
 * reader needs it ({@link #load}, outside the lock, so that readers of other shards go on) and kept
 * while the cache has room: the least recently used shard that no reader holds makes way for the
 * next. A reader that needs a shard while every byte is held waits for a release; readers hold a
 * shard only while they decode one sample, so every wait ends. A shard whose load failed fails every
 * later acquire of it with the same error, so that an epoch stops naming it rather than coming up
 * short. What a shard is, and how it is loaded and freed, is the subclass's: remote tar shards
 * fetched whole (stoke-remote), Parquet row groups read and decompressed (stoke-parquet).
 *
 * @param <E> the subclass's entry: what one loaded shard holds
 */
public abstract class BoundedShardCache<E extends BoundedShardCache.Entry> implements ShardBytes {
    /** One shard in the cache: being loaded, ready, or failed. Guarded by the cache's lock. */
    public static class Entry {
        private final long size;

        // The cache's own (its package), under its lock; not the subclass's.
        MemorySegment bytes;
        boolean ready;
        RuntimeException failure;
        int holders;
        long lastUse;

        protected Entry(long size) {
            this.size = size;
        }

        /** Bytes the shard takes in the cache. */
        public final long size() {
            return size;
        }
    }

    private final long capacity;
    private final Entry[] entries;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private long used;
    private long clock;
    private boolean closed;

    protected BoundedShardCache(int shards, long capacity) {
        this.capacity = capacity;
        this.entries = new Entry[shards];
    }

    /** A new, empty entry for {@code shard}, of the size it will take; under the lock. */
    protected abstract E newEntry(int shard);

    /**
     * Loads {@code shard} into {@code entry} and returns its bytes; outside the lock, on the
     * acquiring reader's thread. A failure is kept as the shard's: throw what later acquires should.
     */
    protected abstract MemorySegment load(int shard, E entry);

    /** Frees what a loaded or failed entry holds; under the lock, no reader holding it. */
    protected abstract void free(E entry);

    /** Called under the lock once {@code entry} is ready (counters). */
    protected void loaded(E entry) {}

    /** How an error names {@code shard}. */
    protected String describe(int shard) {
        return "shard " + shard;
    }

    @Override
    public final MemorySegment acquire(int shard) {
        E mine;
        lock.lock();
        try {
            while (true) {
                if (closed) {
                    throw new IllegalStateException("the shard cache is closed");
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
                if (e == null) {
                    E fresh = newEntry(shard);
                    if (makeRoom(fresh.size())) {
                        mine = fresh;
                        mine.holders = 1;
                        entries[shard] = mine;
                        used += mine.size();
                        break;
                    }
                }
                changed.awaitUninterruptibly(); // another reader is loading it, or the cache is full of held shards
            }
        } finally {
            lock.unlock();
        }
        return loadOutsideTheLock(shard, mine);
    }

    @Override
    public final MemorySegment acquireIfLoaded(int shard) {
        lock.lock();
        try {
            Entry e = entries[shard];
            if (closed || e == null || !e.ready) {
                return null;
            }
            e.holders++;
            e.lastUse = ++clock;
            return e.bytes;
        } finally {
            lock.unlock();
        }
    }

    private MemorySegment loadOutsideTheLock(int shard, E e) {
        MemorySegment bytes = null;
        Throwable failure = null;
        try {
            bytes = load(shard, e);
        } catch (RuntimeException | Error x) {
            failure = x;
        }
        lock.lock();
        try {
            if (failure != null) {
                // Kept, and every waiter woken: an Error too, which would otherwise leave them waiting.
                e.failure = failure instanceof RuntimeException r
                        ? r
                        : new IllegalStateException(describe(shard) + " could not be loaded: " + failure, failure);
                e.holders = 0;
                used -= e.size();
                free(e);
                changed.signalAll();
            } else if (closed) {
                // Closed while this reader loaded: nobody else will free it.
                used -= e.size();
                free(e);
                failure = new IllegalStateException("the shard cache was closed while " + describe(shard) + " loaded");
                changed.signalAll();
            } else {
                e.bytes = bytes;
                e.ready = true;
                e.lastUse = ++clock;
                loaded(e);
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
        if (failure instanceof RuntimeException r) {
            throw r;
        }
        if (failure instanceof Error err) {
            throw err;
        }
        return bytes;
    }

    /**
     * Evicts unheld shards, least recently used first, until {@code bytes} more fit; false when they
     * cannot yet. A shard larger than the whole cache still loads when the cache is empty.
     */
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
                return used == 0;
            }
            @SuppressWarnings("unchecked")
            E e = (E) entries[victim];
            entries[victim] = null;
            used -= e.size();
            free(e);
        }
        return true;
    }

    @Override
    public final void release(int shard) {
        lock.lock();
        try {
            Entry e = entries[shard];
            if (e != null && e.holders > 0) { // none after close(), which freed it
                e.holders--;
                if (e.holders == 0) {
                    changed.signalAll();
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * The entry of {@code shard} while a reader holds it with these {@code bytes} (what its
     * {@link #acquire} returned), else null.
     */
    @SuppressWarnings("unchecked")
    protected final E held(int shard, MemorySegment bytes) {
        lock.lock();
        try {
            Entry e = entries[shard];
            return e != null && e.ready && e.holders > 0 && e.bytes == bytes ? (E) e : null;
        } finally {
            lock.unlock();
        }
    }

    /** Frees every loaded shard; no segment handed out stays valid, and later acquires fail. */
    @Override
    public void close() {
        RuntimeException failed = null;
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
                        used -= e.size();
                        @SuppressWarnings("unchecked")
                        E loaded = (E) e;
                        // Every entry is freed though one fails (an arena a thread still reads in a
                        // native call refuses to close): a shard left unfreed is a file left in a
                        // shared folder that no process removes.
                        try {
                            free(loaded);
                        } catch (RuntimeException x) {
                            if (failed == null) {
                                failed = x;
                            } else {
                                failed.addSuppressed(x);
                            }
                        }
                    }
                }
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        if (failed != null) {
            throw failed;
        }
    }
}
