package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardCatalog;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code stoke catalog}, and opening what it and {@code stoke pack} write. */
class CatalogCommandTest {
    @TempDir
    Path tmp;

    @Test
    void cataloguesShardsMadeElsewhereAndBenchOpensThemFromIt() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("shards"));
        for (int s = 0; s < 3; s++) {
            TestTars.labelledShard(dir.resolve("part-" + s + ".tar"), s, 4 + s);
        }
        String[] r = BenchCommandTest.run("catalog", dir.toString());
        assertEquals("0", r[0], r[2]);
        assertTrue(r[2].contains("3 shards, 15 samples, labelled"), r[2]);
        JsonNode catalog =
                new ObjectMapper().readTree(dir.resolve(ShardCatalog.FILE).toFile());
        assertEquals("wids-shard-index-v1", catalog.path("__kind__").asText());
        assertEquals("part-1.tar", catalog.path("shardlist").get(1).path("url").asText());
        assertEquals(5, catalog.path("shardlist").get(1).path("nsamples").asInt());
        assertEquals(
                Files.size(dir.resolve("part-1.tar")),
                catalog.path("shardlist").get(1).path("filesize").asLong());
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(dir.toString())) {
            assertTrue(d.shards().catalogued());
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
    void packedShardsOpenFromThePacksManifestWhichCatalogLeavesAlone() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 12, 3, 5);
        Path out = tmp.resolve("packed");
        String[] pack = BenchCommandTest.run(
                "pack", data.toString(), "--out", out.toString(), "--resize", "40", "--shard-size", "16K");
        assertEquals("0", pack[0], pack[2]);
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(out.toString())) {
            assertTrue(d.shards().catalogued());
            assertEquals(12, d.size());
            assertTrue(d.shards().shardCount() > 1);
        }
        String before = Files.readString(out.resolve(ShardCatalog.FILE));
        String[] r = BenchCommandTest.run("catalog", out.toString());
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], r[2]);
        assertTrue(r[2].contains("stoke pack's manifest"), r[2]);
        assertEquals(before, Files.readString(out.resolve(ShardCatalog.FILE)));
    }

    /**
     * Over HTTP the catalog cannot be written where the shards are: said before any shard is fetched
     * (nothing listens at port 1), with what to run instead; for Parquet, where its catalog is written.
     */
    @Test
    void overHttpItSaysAtOnceWhereTheCatalogIsWritten() {
        String[] r = BenchCommandTest.run("catalog", "http://127.0.0.1:1/train/shard-{0..9}.tar");
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], r[2]);
        assertTrue(
                r[2].contains(
                        "http://127.0.0.1:1/train/shard-{0..9}.tar is served over HTTP, which Stoke reads and does"
                                + " not write to: `--out index.json` writes the shard catalog here; serve it beside the shards"),
                r[2]);
        r = BenchCommandTest.run("catalog", "https://127.0.0.1:1/train/*.parquet");
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], r[2]);
        assertTrue(
                r[2].contains("run `stoke catalog` on the folder the server serves, which writes parquet-index.json"),
                r[2]);
    }

    @Test
    void damagedShardsAreRefused() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("bad"));
        TestTars.labelledShard(dir.resolve("a.tar"), 0, 3);
        Files.write(dir.resolve("b.tar"), "not a tar file at all".getBytes());
        String[] r = BenchCommandTest.run("catalog", dir.toString());
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[2]);
        assertTrue(r[2].contains("damaged shard(s)") && r[2].contains("b.tar"), r[2]);
        assertFalse(Files.exists(dir.resolve(ShardCatalog.FILE)));
    }

    @Test
    void theOldNamesStillWriteTheSameCatalogAndSayOnceThatTheyAreDeprecated() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("old"));
        for (int s = 0; s < 2; s++) {
            TestTars.labelledShard(dir.resolve("part-" + s + ".tar"), s, 3);
        }
        Path now = tmp.resolve("now.json");
        Path old = tmp.resolve("old.json");
        String[] r = BenchCommandTest.run("catalog", dir.toString(), "--out", now.toString());
        assertEquals("0", r[0], r[2]);
        assertFalse(r[2].contains("deprecated"), r[2]);
        r = BenchCommandTest.run("index", dir.toString(), "--out", old.toString(), "--shard-cache", "1G");
        assertEquals("0", r[0], r[2]);
        assertTrue(r[2].contains("2 shards, 6 samples, labelled"), r[2]);
        assertEquals(1, r[2].split("stoke index is deprecated", -1).length - 1, r[2]);
        assertEquals(1, r[2].split("--shard-cache is deprecated", -1).length - 1, r[2]);
        // The same catalog, but for the name of the file it is in.
        assertEquals(Files.readString(now), Files.readString(old).replace("old.json", "now.json"));
        String[] help = BenchCommandTest.run("--help");
        assertTrue(help[1].contains("catalog") && !help[1].contains(" index "), help[1]);
    }
}
