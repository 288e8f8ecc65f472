package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.testing.CapturedRun;
import io.stoke.loader.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchCommandTest {
    @TempDir
    Path tmp;

    /** Runs the CLI in-process, capturing what it prints. */
    static String[] run(String... args) {
        return CapturedRun.of(() -> Main.execute(args));
    }

    private Path dataWithOneBadFile() throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("data"), 20, 2, 3);
        Files.write(root.resolve("class01/zz_broken.jpg"), "not a jpeg at all".getBytes());
        return root;
    }

    @Test
    void printsTheFiguresAndSucceedsOnCleanData() throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("clean"), 20, 2, 4);
        Path json = tmp.resolve("out.json");
        String[] r = run(
                "bench",
                root.toString(),
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--resize",
                "40",
                "--crop",
                "32",
                "--warmup-images",
                "8",
                "--json",
                json.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        for (String line : new String[] {
            "throughput",
            "images/s",
            "time to first batch",
            "consumer wait p50",
            "consumer wait p99",
            "workers",
            "batch size"
        }) {
            assertTrue(r[1].contains(line), "missing '" + line + "' in\n" + r[1]);
        }
        assertTrue(r[1].contains("20 in 5 batches"), r[1]);
        JsonNode j = new ObjectMapper().readTree(json.toFile());
        assertEquals(20, j.get("images").asLong(), j.toString());
        assertEquals(5, j.get("batches").asLong(), j.toString());
        assertEquals(5, j.get("wait_ns").size(), j.toString());
        assertTrue(j.get("time_to_first_batch_s").asDouble() > 0, j.toString());
        // The first batch counts from build(), its wait from the first next(): never less.
        assertTrue(
                j.get("time_to_first_batch_s").asDouble()
                        >= j.get("wait_ns").get(0).asLong() / 1e9,
                j.toString());
    }

    @Test
    void autoWorkersSayWhereTheyEndedAndEveryChange() throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("auto"), 40, 2, 6);
        Path json = tmp.resolve("auto.json");
        String[] r = run(
                "bench",
                root.toString(),
                "--batch-size",
                "4",
                "--workers",
                "auto",
                "--max-workers",
                "2",
                "--resize",
                "40",
                "--crop",
                "32",
                "--epochs",
                "3",
                "--json",
                json.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("auto workers"), r[1]);
        JsonNode j = new ObjectMapper().readTree(json.toFile());
        assertTrue(j.get("auto_workers").asBoolean(), j.toString());
        int most = Math.min(2, Runtime.getRuntime().availableProcessors());
        assertEquals(most, j.get("workers").asInt(), j.toString());
        int end = j.get("active_workers_at_end").asInt();
        assertTrue(end >= 1 && end <= most, j.toString());
        int active = most;
        for (JsonNode change : j.get("worker_changes")) {
            assertEquals(active, change.get("from_workers").asInt(), j.toString());
            assertTrue(change.get("reason").asText().length() > 10, j.toString());
            active = change.get("to_workers").asInt();
        }
        assertEquals(end, active, j.toString());

        String[] bad = run("bench", root.toString(), "--workers", "many");
        assertNotEquals("0", bad[0]);
        assertTrue(bad[2].contains("--workers takes a positive number or auto, not 'many'"), bad[2]);
    }

    @Test
    void aBadFileFailsTheRunAndIsNamed() throws Exception {
        String[] r = run(
                "bench",
                dataWithOneBadFile().toString(),
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--resize",
                "40",
                "--crop",
                "32",
                "--no-warmup");
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[1] + r[2]);
        assertTrue(
                r[1].contains("FAILED:") && r[1].contains("zz_broken.jpg") && r[1].contains("not an image file"), r[1]);
    }

    @Test
    void aBadFileIsSkippedAndNamedUnderSkip() throws Exception {
        String[] r = run(
                "bench",
                dataWithOneBadFile().toString(),
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--resize",
                "40",
                "--crop",
                "32",
                "--no-warmup",
                "--on-error",
                "skip");
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("skipped:") && r[1].contains("zz_broken.jpg"), r[1]);
        assertTrue(r[1].contains("21 in 6 batches (1 skipped"), r[1]);
    }

    @Test
    void askingForAGpuWithoutADriverSaysSoAndExitsThree() {
        Path root = TestImages.imageFolder(tmp.resolve("gpu"), 8, 2, 5);
        String previous = System.getProperty("stoke.cuda.path");
        System.setProperty(
                "stoke.cuda.path", tmp.resolve("no-such-libcuda.so.1").toString());
        try {
            String[] r = run(
                    "bench",
                    root.toString(),
                    "--batch-size",
                    "4",
                    "--resize",
                    "40",
                    "--crop",
                    "32",
                    "--no-warmup",
                    "--device",
                    "cuda");
            assertEquals(Integer.toString(Main.EXIT_NO_DEVICE), r[0], r[1] + r[2]);
            assertTrue(r[2].contains("no CUDA driver found"), r[2]);

            String[] auto = run(
                    "bench",
                    root.toString(),
                    "--batch-size",
                    "4",
                    "--resize",
                    "40",
                    "--crop",
                    "32",
                    "--no-warmup",
                    "--device",
                    "auto");
            assertEquals("0", auto[0], auto[1] + auto[2]);
            assertTrue(
                    auto[2].contains("no CUDA driver found") && auto[2].contains("continuing with host batches"),
                    auto[2]);
            assertTrue(auto[1].contains("8 in 2 batches"), auto[1]);
        } finally {
            if (previous == null) {
                System.clearProperty("stoke.cuda.path");
            } else {
                System.setProperty("stoke.cuda.path", previous);
            }
        }
    }

    @Test
    void wrongUsageIsRefusedWithAMessage() {
        String[] r = run("bench", tmp.resolve("nothing-here").toString());
        assertNotEquals("0", r[0]);
        assertTrue(r[2].contains("nothing-here"), r[2]);
        String[] help = run("bench", "--help");
        assertEquals("0", help[0]);
        for (String opt : new String[] {
            "--workers",
            "--batch-size",
            "--epochs",
            "--shuffle",
            "--seed",
            "--resize",
            "--crop",
            "--output",
            "--on-error"
        }) {
            assertTrue(
                    help[1].contains(opt) || help[1].contains(opt.replace("--", "--[no-]")),
                    opt + " missing from --help");
        }
    }

    @Test
    void theTrainTransformRunsAndBadSettingsAreUsageErrors() {
        Path root = TestImages.imageFolder(tmp.resolve("train"), 20, 2, 6);
        String[] r = run(
                "bench",
                root.toString(),
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--crop",
                "48",
                "--transform",
                "train",
                "--scale",
                "0.2,1",
                "--ratio",
                "0.5,2",
                "--flip",
                "0.3",
                "--shuffle",
                "--seed",
                "3",
                "--no-warmup");
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("20 in 5 batches (0 skipped"), r[1]);
        String[] bad = run("bench", root.toString(), "--transform", "train", "--scale", "0.5,0.2", "--no-warmup");
        assertNotEquals("0", bad[0]);
        assertTrue((bad[1] + bad[2]).contains("scale"), bad[1] + bad[2]);
        String[] unknown = run("bench", root.toString(), "--transform", "augment", "--no-warmup");
        assertTrue(
                (unknown[1] + unknown[2]).contains("--transform takes one of eval, train, squash, not 'augment'"),
                unknown[1] + unknown[2]);
    }
}
