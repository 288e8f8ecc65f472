package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stoke cache}: every JPEG copied once, a second run copies nothing, shards' members that
 * seek already are read as they are.
 */
class CacheCommandTest {
    @TempDir
    Path tmp;

    private static long entries(Path dir) throws Exception {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(p -> p.toString().endsWith(".stc")).count();
        }
    }

    @Test
    void fillsEveryJpegOnceAndSaysSo() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path data = TestImages.imageFolder(tmp.resolve("data"), 12, 3, 4);
        Path cache = tmp.resolve("cache");
        String[] first = BenchCommandTest.run("cache", data.toString(), "--restart-cache-dir", cache.toString());
        assertEquals("0", first[0], first[1] + first[2]);
        assertTrue(first[1].contains(": 12 copied, 0 to be read as they are"), first[1]);
        assertEquals(12, entries(cache));
        String[] again = BenchCommandTest.run("cache", data.toString(), "--restart-cache-dir", cache.toString());
        assertTrue(
                again[1].contains(": 0 copied, 0 to be read as they are (they seek already, or cannot be copied),"
                        + " 12 there already"),
                again[1]);
        // A loader over the filled cache reads every copy: bench says nothing new, and still decodes all.
        String[] bench = BenchCommandTest.run(
                "bench", data.toString(), "--cache-dir", cache.toString(), "--batch-size", "4", "--workers", "1");
        assertEquals("0", bench[0], bench[1] + bench[2]);
        assertEquals(12, entries(cache));
        // Its table says what the cache did in each epoch: every read a hit, the folder's bytes counted.
        assertTrue(
                java.util.regex.Pattern.compile("\n  restart cache {10}after epoch 0: \\d+ hits, 0 misses, 0 copied .*"
                                + "; the folder holds [0-9.]+ [KM]iB of 64\\.0 GiB\n")
                        .matcher(bench[1])
                        .find(),
                bench[1]);
        assertFalse(bench[1].contains("the folder holds 0.0 KiB"), bench[1]);
        // The command's restart cache ended with it: no filler left to write into a folder being
        // removed (CI's @TempDir failed to close so once, the filler recounting as it was deleted).
        assertTrue(
                Thread.getAllStackTraces().keySet().stream()
                        .noneMatch(t -> t.isAlive() && t.getName().startsWith("stoke-cache-filler")),
                "a restart cache filler outlived the command");
    }

    /**
     * A folder it cannot write (here a folder where its count's file goes; a read-only mount, a full
     * disk or another user's folder as well): the command fails naming why, not "FULL" with every
     * file "there already".
     */
    @Test
    void aFolderThatCannotBeWrittenFailsTheCommandNamingWhy() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path data = TestImages.imageFolder(tmp.resolve("data"), 4, 2, 4);
        Path cache = tmp.resolve("cache");
        Files.createDirectories(cache.resolve(".stoke-cache-usage"));
        String[] r = BenchCommandTest.run("cache", data.toString(), "--restart-cache-dir", cache.toString());
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[1] + r[2]);
        assertTrue(r[2].contains("cannot fill the restart cache in " + cache + ": "), r[2]);
        assertTrue(r[2].contains(cache.resolve(".stoke-cache-usage").toString()), r[2]);
        assertFalse(r[1].contains("FULL") || r[1].contains("there already"), r[1]);
        assertEquals(0, entries(cache));
    }

    private static long entryBytes(Path dir) throws Exception {
        try (Stream<Path> s = Files.walk(dir)) {
            long total = 0;
            for (Path p : s.filter(p -> p.toString().endsWith(".stc")).toList()) {
                total += Files.size(p);
            }
            return total;
        }
    }

    @Test
    void twoProcessesFillingOneFolderAtOnceKeepTogetherToItsBudget() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path data = TestImages.imageFolder(tmp.resolve("data"), 60, 3, 8);
        Path whole = tmp.resolve("whole");
        assertEquals("0", BenchCommandTest.run("cache", data.toString(), "--restart-cache-dir", whole.toString())[0]);
        long all = entryBytes(whole);
        long budget = all / 3;
        Path shared = tmp.resolve("shared");
        List<Process> fillers = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Path log = tmp.resolve("filler-" + i + ".log");
            logs.add(log);
            fillers.add(new ProcessBuilder(ShmTestSupport.javaCommand(
                            Main.class.getName(),
                            "cache",
                            data.toString(),
                            "--restart-cache-dir",
                            shared.toString(),
                            "--restart-cache-size",
                            Long.toString(budget),
                            "--workers",
                            "2"))
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start());
        }
        for (int i = 0; i < 2; i++) {
            assertTrue(fillers.get(i).waitFor(120, TimeUnit.SECONDS), "a filler did not end");
            assertEquals(0, fillers.get(i).exitValue(), Files.readString(logs.get(i)));
        }
        long filled = entryBytes(shared);
        // Each process alone would have filed up to the budget: together, two thirds of the whole.
        assertTrue(filled <= budget, filled + " bytes filed against a budget of " + budget);
        long largest = 0;
        try (Stream<Path> s = Files.walk(whole)) {
            for (Path p : s.filter(p -> p.toString().endsWith(".stc")).toList()) {
                largest = Math.max(largest, Files.size(p));
            }
        }
        assertTrue(filled > budget - largest, "filled to its budget: " + filled + " of " + budget);
        String said = Files.readString(logs.get(0)) + Files.readString(logs.get(1));
        assertTrue(said.contains("counted over every process filling it"), said);
        assertFalse(said.contains("cannot lock"), said);
    }

    @Test
    void packedShardsSeekAlreadyAndBadOptionsAreRefusedInOneSentence() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 4, 2, 4);
        Path shards = tmp.resolve("shards");
        assertEquals(
                "0", BenchCommandTest.run("pack", data.toString(), "--out", shards.toString(), "--resize", "32")[0]);
        String[] r = BenchCommandTest.run(
                "cache",
                shards.toString(),
                "--restart-cache-dir",
                tmp.resolve("c").toString());
        if (RestartCopy.available()) {
            assertEquals("0", r[0], r[1] + r[2]);
            // pack's members carry restart markers: each gets an entry saying to read it where it lies.
            assertTrue(r[1].contains(": 0 copied, 4 to be read as they are"), r[1]);
        } else {
            assertEquals("1", r[0]); // said first: nothing can be copied here at all
            assertTrue(r[2].contains("no copies can be made here"), r[2]);
        }
        String[] w = BenchCommandTest.run(
                "cache",
                data.toString(),
                "--restart-cache-dir",
                tmp.resolve("c").toString(),
                "--workers",
                "0");
        assertEquals("2", w[0]);
        assertTrue(w[2].contains("--workers must be positive"), w[2]);
    }

    @Test
    void theOldSpellingsStillSetTheRestartCacheAndSayOnceThatTheyAreDeprecated() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path data = TestImages.imageFolder(tmp.resolve("data"), 6, 2, 5);
        Path now = tmp.resolve("now");
        Path old = tmp.resolve("old");
        String[] r = BenchCommandTest.run("cache", data.toString(), "--restart-cache-dir", now.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        assertFalse(r[2].contains("deprecated"), r[2]);
        // Half the bytes the copies take: the old --cache-size bounds the folder as the new one does.
        long half = entryBytes(now) / 2;
        r = BenchCommandTest.run(
                "cache",
                data.toString(),
                "--cache-dir",
                old.toString(),
                "--cache-size",
                Long.toString(half),
                "--shard-cache",
                "1G");
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("FULL: the rest is read from the originals"), r[1]);
        for (String[] said : new String[][] {
            {"--cache-dir", "--restart-cache-dir"},
            {"--cache-size", "--restart-cache-size"},
            {"--shard-cache", "--shard-cache-size"}
        }) {
            String line = "stoke cache: " + said[0] + " is deprecated and goes in the next release: use " + said[1];
            assertEquals(1, r[2].split(java.util.regex.Pattern.quote(line), -1).length - 1, r[2]);
        }
        assertTrue(entries(old) > 0 && entries(old) < 6, entries(old) + " entries");
        assertTrue(entryBytes(old) <= half, entryBytes(old) + " bytes against a budget of " + half);
        String[] none = BenchCommandTest.run("cache", data.toString());
        assertEquals(Integer.toString(Main.EXIT_USAGE), none[0], none[2]);
        assertTrue(none[2].contains("--restart-cache-dir DIR is required"), none[2]);
    }
}
