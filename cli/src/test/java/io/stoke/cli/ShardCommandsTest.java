package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line over tar shards: `stoke pack` then `stoke bench` on its folder and on a pattern; bad samples named. */
class ShardCommandsTest {
    @TempDir
    Path tmp;

    @Test
    void packThenBenchTheShardsByFolderAndByPattern() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 30, 3, 8);
        Path packed = tmp.resolve("packed");
        String[] p = BenchCommandTest.run(
                "pack",
                data.toString(),
                "--out",
                packed.toString(),
                "--resize",
                "48",
                "--shard-size",
                "40K",
                "--workers",
                "2");
        assertEquals("0", p[0], p[1] + p[2]);
        long shards;
        try (var files = Files.list(packed)) {
            shards = files.filter(f -> f.toString().endsWith(".tar")).count();
        }
        assertTrue(shards >= 2, "several shards: " + shards);
        for (String dataset : new String[] {
            packed.toString(), packed + "/shard-{000000.." + String.format("%06d", shards - 1) + "}.tar"
        }) {
            String[] r = BenchCommandTest.run(
                    "bench",
                    dataset,
                    "--batch-size",
                    "4",
                    "--workers",
                    "2",
                    "--resize",
                    "48",
                    "--crop",
                    "40",
                    "--no-warmup");
            assertEquals("0", r[0], r[1] + r[2]);
            assertTrue(r[1].contains("30 in 8 batches (0 skipped"), r[1]);
            assertTrue(r[2].contains("dataset: 30 images"), r[2]);
        }
    }

    @Test
    void aBadSampleInAShardIsNamedAsShardSlashKeyUnderBothPolicies() throws Exception {
        Path shard = tmp.resolve("bad.tar");
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(Files.newOutputStream(shard))) {
            TestTars.member(tar, "x/good.jpg", TestImages.jpeg(60, 50, 1));
            TestTars.member(tar, "x/good.cls", "0".getBytes(StandardCharsets.US_ASCII));
            TestTars.member(tar, "x/lonely.cls", "1".getBytes(StandardCharsets.US_ASCII));
        }
        String[] fail = BenchCommandTest.run(
                "bench",
                shard.toString(),
                "--batch-size",
                "2",
                "--workers",
                "1",
                "--resize",
                "48",
                "--crop",
                "40",
                "--no-warmup");
        assertEquals(Integer.toString(Main.EXIT_FAILED), fail[0], fail[1] + fail[2]);
        assertTrue(
                fail[1].contains("FAILED:")
                        && fail[1].contains(shard + "/x/lonely")
                        && fail[1].contains("no image member"),
                fail[1]);
        String[] skip = BenchCommandTest.run(
                "bench",
                shard.toString(),
                "--batch-size",
                "2",
                "--workers",
                "1",
                "--resize",
                "48",
                "--crop",
                "40",
                "--no-warmup",
                "--on-error",
                "skip");
        assertEquals("0", skip[0], skip[1] + skip[2]);
        assertTrue(skip[1].contains("skipped:") && skip[1].contains(shard + "/x/lonely"), skip[1]);
        // A shard that is not a tar at all is named when the dataset is opened.
        Path garbage = tmp.resolve("garbage.tar");
        Files.write(garbage, new byte[3000]);
        Files.write(garbage, "definitely not a tar archive".getBytes(StandardCharsets.US_ASCII));
        String[] none = BenchCommandTest.run("bench", garbage.toString(), "--no-warmup");
        assertTrue(!none[0].equals("0") && none[2].contains(garbage.toString()), none[0] + none[1] + none[2]);
    }
}
