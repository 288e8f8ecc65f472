package io.stoke.loader;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.sample.Sampler.PartitionTail;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The names issue 46 retired, kept one release as deprecated aliases: each still does what its new
 * name does, checked against what the new name is specified to give rather than only against it.
 */
@SuppressWarnings("removal")
class DeprecatedNamesTest {
    @TempDir
    static Path tmp;

    @Test
    void theShardNamesOfARanksShareSplitAsThePartitionNamesDo() {
        int n = 37;
        try (Dataset d = ImageFolder.scan(TestImages.imageFolder(tmp.resolve("folder"), n, 3, 1))) {
            int[] permutation = Loader.builder(d)
                    .batchSize(5)
                    .shuffle(true)
                    .seed(4)
                    .sampler()
                    .order(2);
            // Rank 1 of 3 with the tail dropped: every third sample of the permutation from the second, floor(37/3) of
            // them.
            int[] expected =
                    IntStream.range(0, n / 3).map(j -> permutation[1 + 3 * j]).toArray();
            Sampler now = Loader.builder(d)
                    .batchSize(5)
                    .shuffle(true)
                    .seed(4)
                    .partition(1, 3)
                    .partitionTail(PartitionTail.DROP)
                    .sampler();
            Sampler old = Loader.builder(d)
                    .batchSize(5)
                    .shuffle(true)
                    .seed(4)
                    .shard(1, 3)
                    .shardTail(Sampler.ShardTail.DROP)
                    .sampler();
            Sampler direct = new Sampler(n, 5, true, 4, false, 1, 3, Sampler.ShardTail.DROP);
            for (Sampler s : List.of(now, old, direct)) {
                assertArrayEquals(expected, s.order(2));
                assertEquals(PartitionTail.DROP, s.partitionTail());
                assertEquals(Sampler.ShardTail.DROP, s.shardTail());
                assertEquals(n / 3, s.shardSize());
                assertEquals(n / 3, s.partitionSize());
            }
            assertEquals(PartitionTail.PAD, Sampler.ShardTail.PAD.partitionTail());
            LoaderState state = LoaderState.of(old, 1, 3, 2, 1);
            assertEquals(Sampler.ShardTail.DROP, state.shardTail());
            // The saved state keeps the key Python's state_dict() writes, and reads the new one too.
            assertTrue(state.toJson().contains("\"shard_tail\":\"drop\""), state.toJson());
            LoaderState renamed = LoaderState.parse(state.toJson().replace("shard_tail", "partition_tail"), "renamed")
                    .get(0);
            assertEquals(PartitionTail.DROP, renamed.partitionTail());
        }
    }
}
