package io.stoke.parquet;

import io.stoke.loader.shardcache.BoundedShardCache;
import io.stoke.loader.source.ShardBytes;
import io.stoke.loader.source.ShardFormat;
import io.stoke.loader.source.ShardTable;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;

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
final class RowGroupCache extends BoundedShardCache<RowGroupCache.Entry> implements ShardFormat {
    /** A loaded row group: its block, owned by its own arena, and its table. */
    static final class Entry extends BoundedShardCache.Entry {
        final Arena arena = Arena.ofShared();
        ShardTable table;

        Entry(long size) {
            super(size);
        }
    }

    private final ParquetTable table;
    private final ShardTable[] firstTables;
    private final AtomicBoolean saidCopied = new AtomicBoolean();
    private final AutoCloseable files;
    private final boolean remote;
    private final AtomicLongArray versions; // 0 until known

    /**
     * Row groups of {@code table}, at most {@code capacity} bytes of them loaded; owns what reads the
     * files ({@code files}: the local files' mappings, or the object store), and closes it last.
     */
    RowGroupCache(ParquetTable table, long capacity, AutoCloseable files, boolean remote) {
        super(table.shards(), capacity);
        this.table = table;
        this.files = files;
        this.remote = remote;
        this.firstTables = new ShardTable[table.shards()];
        this.versions = new AtomicLongArray(table.shards());
    }

    @Override
    protected Entry newEntry(int shard) {
        return new Entry(table.blockBytes(shard));
    }

    /** Reads the row group into its block, outside the cache's lock. */
    @Override
    protected MemorySegment load(int shard, Entry e) {
        MemorySegment block = e.arena.allocate(e.size(), 16);
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
                throw new IllegalStateException(
                        table.shardName(shard) + " loaded again lays out differently from its first load: not read");
            }
        }
        e.table = t;
        return block;
    }

    @Override
    protected void free(Entry e) {
        e.arena.close();
    }

    @Override
    protected String describe(int shard) {
        return table.shardName(shard);
    }

    @Override
    public long size(int shard) {
        return table.blockBytes(shard);
    }

    /**
     * The file's version (its size and modification time, or its ETag), the row group's place in it
     * and the image column: what fixes the bytes of the row group's block.
     */
    @Override
    public long version(int shard) {
        long v = versions.get(shard);
        if (v == 0) {
            ParquetTable.File f = table.file(shard);
            long file = switch (f.input()) {
                case MappedInputFile m -> m.version();
                case RemoteInputFile r -> ShardBytes.versionOf(r.etag());
                default -> 0;
            };
            v = ShardBytes.versionWith(
                    ShardBytes.versionWith(file, table.rowGroup(shard)),
                    f.columns().toString().hashCode()); // every column read shapes the block
            int[] deleted = f.deletedIn(table.firstRowInFile(shard), table.rows(shard));
            if (deleted.length > 0) {
                // Which rows are samples: another snapshot's deletion vector numbers them otherwise.
                v = ShardBytes.versionWith(v, java.util.Arrays.hashCode(deleted));
            }
            versions.set(shard, v);
        }
        return v;
    }

    @Override
    public ShardTable table(int shard, MemorySegment bytes) {
        Entry e = held(shard, bytes);
        if (e == null) {
            throw new IllegalStateException(table.shardName(shard) + " is not held while its table is read");
        }
        return e.table;
    }

    @Override
    public String sampleName(int shard, int index, String key) {
        long row = table.rowOf(shard, index);
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
        try {
            super.close();
        } finally {
            try {
                files.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing " + table.shardName(0) + "'s files: " + e.getMessage(), e);
            }
        }
    }
}
