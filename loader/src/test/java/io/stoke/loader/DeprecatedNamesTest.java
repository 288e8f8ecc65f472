package io.stoke.loader;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.sample.Sampler.PartitionTail;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ShardCatalog;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider.ShardCache;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Assumptions;
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

    @Test
    void datasetsOpensOldOverloadsKeepTheContractsOfTheirNewNames() throws IOException {
        Path shards = Files.createDirectories(tmp.resolve("shards"));
        TestTars.labelledShard(shards.resolve("a-0.tar"), 0, 3);
        Files.write(shards.resolve("a-1.tar"), new byte[] {'n', 'o', 't', ' ', 'a', ' ', 't', 'a', 'r'});
        String spec = shards.toString();
        // As it is: the whole-shard damage is only listed, under either name.
        try (Dataset now = Datasets.openLocal(spec);
                Dataset old = Datasets.open(spec)) {
            assertEquals(3, now.size());
            assertEquals(3, old.size());
            assertEquals(
                    1,
                    ((io.stoke.loader.source.ShardDataset) old)
                            .shards()
                            .problems()
                            .size());
        }
        // Checked under a policy: FAIL refuses it naming the shard, SKIP says so and keeps the rest.
        for (boolean deprecated : new boolean[] {false, true}) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> (deprecated
                                    ? Datasets.open(spec, ErrorPolicy.FAIL, w -> {})
                                    : Datasets.openLocalChecked(spec, ErrorPolicy.FAIL, w -> {}))
                            .close());
            assertTrue(e.getMessage().contains("a-1.tar"), e.getMessage());
            List<String> said = new ArrayList<>();
            try (Dataset d = deprecated
                    ? Datasets.open(spec, ErrorPolicy.SKIP, said::add)
                    : Datasets.openLocalChecked(spec, ErrorPolicy.SKIP, said::add)) {
                assertEquals(3, d.size());
                assertTrue(said.stream().anyMatch(w -> w.contains("a-1.tar")), said.toString());
            }
        }
        // With a shard cache: a URL goes to its scheme's provider (none in this module), columns only to a table.
        ShardCache shardCache = new ShardCache(1 << 20, null);
        String url = "s3://bucket/train/";
        for (Runnable open : List.<Runnable>of(
                () -> Datasets.openLocalOrUrl(url, shardCache).close(),
                () -> Datasets.open(url, shardCache).close(),
                () -> Datasets.open(url, shardCache, TableColumns.DEFAULT).close())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, open::run);
            assertTrue(e.getMessage().contains("stoke-remote"), e.getMessage());
        }
        TableColumns named = new TableColumns("jpg", null, null);
        for (Runnable open : List.<Runnable>of(
                () -> Datasets.openLocalOrUrl(spec, shardCache, named).close(),
                () -> Datasets.open(spec, shardCache, named).close())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, open::run);
            assertTrue(e.getMessage().contains("is neither a Parquet nor an Arrow dataset"), e.getMessage());
        }
        try (Dataset old = Datasets.open(spec, shardCache)) {
            assertEquals(3, old.size());
        }
    }

    @Test
    void theBuildersCacheIsTheRestartCache() {
        // The restart cache needs Stoke's region decoder (a C build), as RestartCacheTest does.
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path folder = TestImages.imageFolder(tmp.resolve("restart"), 12, 2, 3);
        try (Dataset d = ImageFolder.scan(folder);
                RestartCache restartCache = RestartCache.open(tmp.resolve("restart-cache"), 1L << 26, m -> {})) {
            try (Loader l = Loader.builder(d)
                    .transform(TransformSpec.defaults().withResize(32, 32))
                    .batchSize(4)
                    .workers(1)
                    .cache(restartCache)
                    .build()) {
                for (Batch b : l) {
                    b.close();
                }
            }
            // Each of the 12 originals was looked up in the restart cache, which held none of them yet.
            assertEquals(12, restartCache.stats().misses(), restartCache.stats().toString());
        }
    }

    @Test
    void theIndexNamesOfTheShardCatalogOpenAndTellAsTheCatalogNamesDo() throws IOException {
        Path shards = Files.createDirectories(tmp.resolve("catalogued"));
        TestTars.labelledShard(shards.resolve("c-0.tar"), 0, 2);
        TestTars.labelledShard(shards.resolve("c-1.tar"), 1, 3);
        Path file = shards.resolve(ShardCatalog.FILE);
        try (ShardDataset scanned =
                (ShardDataset) Datasets.openLocal(shards.resolve("c-{0..1}.tar").toString())) {
            assertFalse(scanned.shards().catalogued());
            assertFalse(scanned.shards().indexed());
            ShardCatalog catalog =
                    ShardCatalog.of(scanned, name -> Path.of(name).getFileName().toString());
            try (OutputStream out = Files.newOutputStream(file)) {
                catalog.write(out, file.toString());
            }
        }
        try (ShardDataset now = Datasets.openCatalog(file);
                ShardDataset old = Datasets.openIndexed(file)) {
            for (ShardDataset d : List.of(now, old)) {
                assertEquals(5, d.size());
                assertEquals(2, d.shards().shardCount());
                assertTrue(d.shards().catalogued());
                assertTrue(d.shards().indexed());
            }
        }
    }
}
