package io.stoke.loader.source;

import java.lang.foreign.MemorySegment;

/**
 * How a kind of shard other than a WebDataset tar file lays out its samples (stoke-parquet's row
 * groups): {@link Shards} asks it for a shard's {@link ShardTable} the first time one of the shard's
 * samples is read, and for the words that name a sample. Thread-safe.
 */
public interface ShardFormat {
    /**
     * The samples of shard {@code shard}, whose bytes are {@code bytes} (as its {@link ShardBytes}
     * gave them, held for the call). A sample that cannot be read is a row of the table with its
     * status and reason, never an exception: a shard damaged as a whole throws, naming it.
     */
    ShardTable table(int shard, MemorySegment bytes);

    /** How an error names sample {@code index} of shard {@code shard}, whose key is {@code key}. */
    String sampleName(int shard, int index, String key);

    /**
     * The file (or object) shard {@code shard} lies in, as the user named it: consecutive shards of
     * one file share it (a Parquet file's row groups), and outputs per input file are named by it.
     */
    String fileOf(int shard);

    /**
     * Whether a shard's bytes are loaded into the bounded shard cache when read (a Parquet row group),
     * so that the dataset is shuffled within windows of shards by default; false for shards mapped
     * where they lie (an Arrow file), which are shuffled whole.
     */
    default boolean cached() {
        return true;
    }

    /** Said once when no sample of the dataset {@code spec} has a label. */
    String unlabelledNote(String spec);
}
