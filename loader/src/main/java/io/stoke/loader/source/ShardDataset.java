package io.stoke.loader.source;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.List;

/**
 * A dataset of shards: WebDataset tar shards, local ({@link MappedShards}) or remote, or another
 * {@link ShardFormat}'s (Parquet row groups). Its paths are the samples' keys, and {@link #shards()} says where each sample's members lie. It owns the shards'
 * memory: close it when the last loader over it is closed.
 */
public final class ShardDataset extends Dataset {
    private final Shards shards;
    private volatile String snapshot; // written once, by the opener, before the dataset is shared
    private volatile int filesWithDeletedRows; // the same

    ShardDataset(Path root, Shards shards) {
        super(root, List.of());
        this.shards = shards;
    }

    /** The dataset of {@code shards}, whose relative names resolve against {@code root}; it owns the shards. */
    public static ShardDataset of(Path root, Shards shards) {
        return new ShardDataset(root, shards);
    }

    /**
     * The lakehouse table snapshot this dataset is, as the spec that opens that snapshot alone
     * ({@code TABLE@v12}): what a resumed run opens, whatever was written to the table since; null
     * for any other dataset.
     */
    public String snapshot() {
        return snapshot;
    }

    /**
     * The data files of its table snapshot some of whose rows the table's log deletes (Delta Lake's
     * deletion vectors): this dataset leaves those rows out, and such a file read alone would give
     * them. 0 for any other dataset.
     */
    public int filesWithDeletedRows() {
        return filesWithDeletedRows;
    }

    /**
     * Names the table snapshot this dataset is ({@link #snapshot()}) and how many of its files have
     * deleted rows ({@link #filesWithDeletedRows()}); stoke-lakehouse's, once, at open.
     */
    public ShardDataset pinnedTo(String snapshotSpec, int filesWithDeletedRows) {
        if (snapshot != null) {
            throw new IllegalStateException("this dataset is " + snapshot + " already");
        }
        this.filesWithDeletedRows = filesWithDeletedRows;
        snapshot = snapshotSpec;
        return this;
    }

    /** Where each sample's members lie, and in which shard. */
    public Shards shards() {
        return shards;
    }

    @Override
    public int size() {
        return shards.firstSample(shards.shardCount());
    }

    @Override
    void digest(MessageDigest digest) {
        for (int s = 0; s < shards.shardCount(); s++) {
            String file = shards.fileOf(s);
            line(digest, file.substring(file.lastIndexOf('/') + 1), shards.firstSample(s + 1) - shards.firstSample(s));
        }
    }

    @Override
    public int label(int sample) {
        return shards.label(sample);
    }

    @Override
    public String path(int sample) {
        return shards.key(sample);
    }

    @Override
    public int pathLength(int sample) {
        return shards.keyLength(sample);
    }

    @Override
    public boolean isAbsolute(int sample) {
        return false;
    }

    @Override
    public int copyPath(int sample, MemorySegment dst, long offset) {
        return shards.copyKey(sample, dst, offset);
    }

    @Override
    public String name(int sample) {
        return shards.name(sample);
    }

    @Override
    public SampleReader reader(long maxBytes) {
        return new ShardReader(shards, maxBytes);
    }

    @Override
    public void close() {
        shards.close();
    }
}
