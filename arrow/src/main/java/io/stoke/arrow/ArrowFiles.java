package io.stoke.arrow;

import io.stoke.loader.source.ShardBytes;
import io.stoke.loader.source.ShardFormat;
import io.stoke.loader.source.ShardTable;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A dataset's Arrow files, each mapped once, read-only, and kept mapped until {@link #close}: the
 * bytes of shard {@code s} are its file's mapping, and its table (built when the dataset was opened)
 * places each image in it. A shard is a run of samples whose rows lie in one file: the whole file in
 * file order, several runs where an indices mapping moves between files. One {@link Arena} owns every
 * mapping, since all workers read them.
 */
final class ArrowFiles implements ShardBytes, ShardFormat {
    private final Arena arena;
    private final MemorySegment[] maps; // by file
    private final long[] versions; // by file
    private final String[] names; // by file
    private final int[] fileOfShard;
    private final ShardTable[] tables; // by shard

    ArrowFiles(
            Arena arena,
            MemorySegment[] maps,
            long[] versions,
            String[] names,
            int[] fileOfShard,
            ShardTable[] tables) {
        this.arena = arena;
        this.maps = maps;
        this.versions = versions;
        this.names = names;
        this.fileOfShard = fileOfShard;
        this.tables = tables;
    }

    @Override
    public MemorySegment acquire(int shard) {
        return maps[fileOfShard[shard]];
    }

    @Override
    public void release(int shard) {
        // Mappings live until close: the page cache decides what stays in memory.
    }

    @Override
    public long size(int shard) {
        return maps[fileOfShard[shard]].byteSize();
    }

    @Override
    public long version(int shard) {
        return versions[fileOfShard[shard]];
    }

    @Override
    public ShardTable table(int shard, MemorySegment bytes) {
        return tables[shard];
    }

    @Override
    public String sampleName(int shard, int index, String key) {
        return names[fileOfShard[shard]] + " row " + key;
    }

    @Override
    public String fileOf(int shard) {
        return names[fileOfShard[shard]];
    }

    @Override
    public boolean cached() {
        return false; // mapped where they lie: shuffled whole, as a folder is
    }

    @Override
    public String unlabelledNote(String spec) {
        return "no integer label column in " + spec + " (label_column= names one): every label is -1";
    }

    @Override
    public void close() {
        arena.close();
    }
}
