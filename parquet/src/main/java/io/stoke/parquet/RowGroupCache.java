package io.stoke.parquet;

import io.stoke.loader.source.ShardBytes;
import io.stoke.loader.source.ShardFormat;
import io.stoke.loader.source.ShardTable;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A Parquet dataset's row groups, loaded when read and held in a bounded cache: the unit of fetch
 * and cache, as a tar shard is. A loaded row group is one block of native memory, owned by its own
 * arena, holding its image column's decompressed pages; a sample's bytes are a view of the block.
 * Readers take a row group with {@link #acquire} and give it back with {@link #release}; a row group
 * no reader holds is evicted, least recently used first, when another needs the room. It is also
 * the dataset's {@link ShardFormat}: a row group's table is built by the load.
 *
 * <p>A row group loaded again after an eviction must lay out as it did the first time (the
 * dataset's table keeps the first load's offsets): parquet-java allocates in the order it reads, so
 * it does; a load that does not is refused, naming the row group, rather than read wrong.
 */
final class RowGroupCache implements ShardBytes, ShardFormat {
    private static final class Entry {
        final long size;
        Arena arena;
        MemorySegment block;
        ShardTable table;
        int holders;
        long lastUse;
        boolean ready;
        RuntimeException failure;

        Entry(long size) {
            this.size = size;
        }
    }

    private final ParquetTable table;
    private final long capacity;
    private final Entry[] entries;
    private final ShardTable[] firstTables;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final AtomicBoolean saidCopied = new AtomicBoolean();
    private long used;
    private long clock;
    private boolean closed;

    private final AutoCloseable files;
    private final boolean remote;

    /**
     * Row groups of {@code table}, at most {@code capacity} bytes of them loaded; owns what reads the
     * files ({@code files}: the local files' mappings, or the object store), and closes it last.
     */
    RowGroupCache(ParquetTable table, long capacity, AutoCloseable files, boolean remote) {
        this.table = table;
        this.files = files;
        this.remote = remote;
        this.capacity = capacity;
        this.entries = new Entry[table.shards()];
        this.firstTables = new ShardTable[table.shards()];
    }

    @Override
    public MemorySegment acquire(int shard) {
        Entry mine;
        lock.lock();
        try {
            while (true) {
                if (closed) {
                    throw new IllegalStateException("the row group cache is closed");
                }
                Entry e = entries[shard];
                if (e != null && e.failure != null) {
                    throw e.failure;
                }
                if (e != null && e.ready) {
                    e.holders++;
                    e.lastUse = ++clock;
                    return e.block;
                }
                if (e == null && makeRoom(table.blockBytes(shard))) {
                    mine = new Entry(table.blockBytes(shard));
                    mine.holders = 1;
                    entries[shard] = mine;
                    used += mine.size;
                    break;
                }
                changed.awaitUninterruptibly(); // another reader is loading it, or the cache is full of held row groups
            }
        } finally {
            lock.unlock();
        }
        return load(shard, mine);
    }

    /** Loads outside the lock, so that readers of other row groups go on. */
    private MemorySegment load(int shard, Entry e) {
        RuntimeException failure = null;
        Arena arena = Arena.ofShared();
        try {
            MemorySegment block = arena.allocate(e.size, 16);
            RowGroupLoad load =
                    new RowGroupLoad(table.file(shard), table.rowGroup(shard), table.firstRowInFile(shard), block);
            ShardTable t = load.load();
            if (load.copied > 0 && saidCopied.compareAndSet(false, true)) {
                System.err.println("stoke: WARNING: " + table.shardName(shard) + ": parquet-java decoded " + load.copied
                        + " image values outside the row group's pages; they were copied into it (said once)");
            }
            synchronized (firstTables) {
                if (firstTables[shard] == null) {
                    firstTables[shard] = t;
                } else if (!firstTables[shard].sameLayout(t)) {
                    throw new IllegalStateException(table.shardName(shard)
                            + " loaded again lays out differently from its first load: not read");
                }
            }
            e.arena = arena;
            e.block = block;
            e.table = t;
        } catch (RuntimeException x) {
            failure = x;
            arena.close();
        } catch (Error x) {
            // Out of memory, say: the readers waiting for this row group are told, not left waiting
            // for a load that ended, and this thread goes on with the error itself.
            arena.close();
            fail(e, new IllegalStateException(table.shardName(shard) + " could not be loaded: " + x, x));
            throw x;
        }
        if (failure != null) {
            fail(e, failure);
            throw failure;
        }
        lock.lock();
        try {
            e.ready = true;
            e.lastUse = ++clock;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        return e.block;
    }

    /** Marks {@code e}'s load failed, its bytes given back, and wakes the readers waiting for it. */
    private void fail(Entry e, RuntimeException failure) {
        lock.lock();
        try {
            used -= e.size;
            e.holders = 0;
            e.failure = failure;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Evicts unheld row groups, least recently used first, until {@code size} more bytes fit. Under the lock. */
    private boolean makeRoom(long size) {
        while (used + size > capacity) {
            int victim = -1;
            for (int s = 0; s < entries.length; s++) {
                Entry e = entries[s];
                if (e != null && e.ready && e.holders == 0 && (victim < 0 || e.lastUse < entries[victim].lastUse)) {
                    victim = s;
                }
            }
            if (victim < 0) {
                return used == 0; // a row group larger than the cache still loads when nothing else is held
            }
            Entry e = entries[victim];
            entries[victim] = null;
            used -= e.size;
            e.arena.close();
        }
        return true;
    }

    @Override
    public void release(int shard) {
        lock.lock();
        try {
            Entry e = entries[shard];
            if (e == null || e.holders <= 0) {
                throw new IllegalStateException(table.shardName(shard) + " released more often than acquired");
            }
            e.holders--;
            if (e.holders == 0) {
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long size(int shard) {
        return table.blockBytes(shard);
    }

    @Override
    public ShardTable table(int shard, MemorySegment bytes) {
        lock.lock();
        try {
            Entry e = entries[shard];
            if (e == null || !e.ready || e.block != bytes) {
                throw new IllegalStateException(table.shardName(shard) + " is not held while its table is read");
            }
            return e.table;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String sampleName(int shard, int index, String key) {
        long row = table.firstRowInFile(shard) + index;
        String rowKey = Long.toString(row);
        return table.file(shard).name() + " row " + row + (key.equals(rowKey) ? "" : " (" + key + ")");
    }

    @Override
    public String fileOf(int shard) {
        return table.file(shard).name();
    }

    @Override
    public boolean remote() {
        return remote;
    }

    @Override
    public String unlabelledNote(String spec) {
        return "no integer label column in " + spec + " (--label-column names one): every label is -1";
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
                if (e != null && e.arena != null) {
                    e.arena.close();
                }
                entries[s] = null;
            }
            used = 0;
            try {
                files.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing " + table.shardName(0) + "'s files: " + e.getMessage(), e);
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
