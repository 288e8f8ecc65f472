package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.ShardIndex;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code stoke index}, and opening what it and {@code stoke pack} write. */
class IndexCommandTest {
    @TempDir
    Path tmp;

    @Test
    void indexesShardsMadeElsewhereAndBenchOpensThemFromIt() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("shards"));
        for (int s = 0; s < 3; s++) {
            TestTars.labelledShard(dir.resolve("part-" + s + ".tar"), s, 4 + s);
        }
        String[] r = BenchCommandTest.run("index", dir.toString());
        assertEquals("0", r[0], r[2]);
        assertTrue(r[2].contains("3 shards, 15 samples, labelled"), r[2]);
        JsonNode index =
                new ObjectMapper().readTree(dir.resolve(ShardIndex.FILE).toFile());
        assertEquals("wids-shard-index-v1", index.path("__kind__").asText());
        assertEquals("part-1.tar", index.path("shardlist").get(1).path("url").asText());
        assertEquals(5, index.path("shardlist").get(1).path("nsamples").asInt());
        assertEquals(
                Files.size(dir.resolve("part-1.tar")),
                index.path("shardlist").get(1).path("filesize").asLong());
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(dir.toString())) {
            assertTrue(d.shards().indexed());
        }
        String[] bench = BenchCommandTest.run(
                "bench",
                dir.toString(),
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--crop",
                "32",
                "--resize",
                "32",
                "--no-warmup");
        assertEquals("0", bench[0], bench[2]);
        assertTrue(bench[1].contains("15 in 4 batches (0 skipped"), bench[1]);
    }

    @Test
    void packedShardsOpenFromThePacksManifestWhichIndexLeavesAlone() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 12, 3, 5);
        Path out = tmp.resolve("packed");
        String[] pack = BenchCommandTest.run(
                "pack", data.toString(), "--out", out.toString(), "--resize", "40", "--shard-size", "16K");
        assertEquals("0", pack[0], pack[2]);
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(out.toString())) {
            assertTrue(d.shards().indexed());
            assertEquals(12, d.size());
            assertTrue(d.shards().shardCount() > 1);
        }
        String before = Files.readString(out.resolve(ShardIndex.FILE));
        String[] r = BenchCommandTest.run("index", out.toString());
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], r[2]);
        assertTrue(r[2].contains("stoke pack's manifest"), r[2]);
        assertEquals(before, Files.readString(out.resolve(ShardIndex.FILE)));
    }

    @Test
    void damagedShardsAreRefused() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("bad"));
        TestTars.labelledShard(dir.resolve("a.tar"), 0, 3);
        Files.write(dir.resolve("b.tar"), "not a tar file at all".getBytes());
        String[] r = BenchCommandTest.run("index", dir.toString());
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[2]);
        assertTrue(r[2].contains("damaged shard(s)") && r[2].contains("b.tar"), r[2]);
        assertFalse(Files.exists(dir.resolve(ShardIndex.FILE)));
    }
}
