package io.stoke.loader.source;

import java.nio.file.Path;
import java.util.List;

/**
 * A dataset of WebDataset tar shards, local ({@link MappedShards}) or remote: its paths are the
 * samples' keys, and {@link #shards()} says where each sample's members lie. It owns the shards'
 * memory: close it when the last loader over it is closed.
 */
public final class ShardDataset extends Dataset {
    private final TarShards shards;

    ShardDataset(
            Path root, byte[] pathBytes, int[] pathStart, int[] labels, List<String> classNames, TarShards shards) {
        super(root, pathBytes, pathStart, labels, classNames);
        this.shards = shards;
    }

    /** Where each sample's members lie, and in which shard. */
    public TarShards shards() {
        return shards;
    }

    @Override
    public String name(int sample) {
        return shards.shardName(shards.shardOf(sample)) + "/" + path(sample);
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
