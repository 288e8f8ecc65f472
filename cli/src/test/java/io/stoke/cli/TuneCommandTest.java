package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.testing.TestImages;
import io.stoke.tune.TuneReport;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stoke tune} end to end on a small dataset, with short points: the files, their
 * consistency, the coarse orderings a cost model must get right, and the refusals. No speed is
 * asserted beyond orderings and agreement with its own prediction.
 */
class TuneCommandTest {
    @TempDir
    Path tmp;

    /**
     * 96 photo-sized JPEGs (400 x 300) in 3 classes: decoding each costs enough that a second worker
     * shows beside the consumer's own per-batch work.
     */
    private Path data() {
        Path root = tmp.resolve("data");
        try {
            for (int i = 0; i < 96; i++) {
                Path dir = Files.createDirectories(root.resolve("class" + i % 3));
                Files.write(dir.resolve(String.format("img%03d.jpg", i)), TestImages.jpeg(400, 300, 11_000 + i));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return root;
    }

    /** Skips the rest of a test whose orderings need the machine to itself, when it did not have it. */
    private static void assumeQuiet(TuneReport.Report r) {
        Assumptions.assumeTrue(
                r.decode().stream().allMatch(d -> d.otherCores() <= 0.25)
                        && r.measured().stream().allMatch(m -> m.otherCores() <= 0.25),
                "other processes kept the cores busy during tune's runs: the orderings are not checked");
    }

    /**
     * Runs tune with short points over two batch sizes and up to two workers, {@code extra} options
     * replacing those; fails the test on a non-zero exit; gives the report it wrote.
     */
    private TuneReport.Report tune(Path data, Path out, String... extra) throws IOException {
        Map<String, String> options = new LinkedHashMap<>();
        options.put("--batch-sizes", "16,32");
        options.put("--max-workers", "2");
        options.put("--seconds-per-point", "0.4");
        options.put("--out", out.toString());
        List<String> flags = new ArrayList<>();
        for (int i = 0; i < extra.length; i++) {
            if (extra[i].equals("--exhaustive")) {
                flags.add(extra[i]);
            } else {
                options.put(extra[i], extra[++i]);
            }
        }
        List<String> args = new ArrayList<>(List.of("tune", data.toString()));
        options.forEach((k, v) -> args.addAll(List.of(k, v)));
        args.addAll(flags);
        String[] r = BenchCommandTest.run(args.toArray(String[]::new));
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("recommended: --batch-size "), r[1]);
        TuneReport.Report report = TuneReport.read(out.resolve("tune.json"));
        consistent(report);
        return report;
    }

    /** What every tune.json must satisfy, whatever was measured. */
    private static void consistent(TuneReport.Report r) {
        List<Integer> sizes = r.settings().batchSizes();
        int maxWorkers = r.settings().maxWorkers();
        assertEquals(sizes.size() * maxWorkers, r.predicted().size(), "one prediction per point");
        Set<List<Integer>> grid = new HashSet<>();
        for (TuneReport.PredictedOut p : r.predicted()) {
            assertTrue(grid.add(List.of(p.batchSize(), p.workers())), "predicted twice: " + p);
            assertTrue(p.imagesPerSecond() > 0 && Double.isFinite(p.imagesPerSecond()), p.toString());
        }
        assertEquals(sizes.size(), r.steps().size(), "a step cost per batch size");
        assertFalse(r.measured().isEmpty());
        Set<List<Integer>> seen = new HashSet<>();
        double best = 0;
        for (TuneReport.MeasuredOut m : r.measured()) {
            List<Integer> key = List.of(m.batchSize(), m.workers());
            assertTrue(grid.contains(key), "measured off the grid: " + m);
            assertTrue(seen.add(key), "measured twice: " + m);
            assertTrue(m.batches() >= 3, "at least 3 batches timed: " + m);
            assertTrue(m.images() <= m.batches() * m.batchSize() && m.images() > (m.batches() - 1) * 1L, m.toString());
            assertEquals(m.images() / m.seconds(), m.imagesPerSecond(), 1e-6 * m.imagesPerSecond(), m.toString());
            assertTrue(m.stallFraction() >= 0 && m.stallFraction() <= 1, m.toString());
            assertEquals(
                    m.seconds(),
                    m.batches() * (m.waitMsPerBatch() + m.stepMsPerBatch()) / 1e3,
                    0.05 * m.seconds(),
                    "the window is its waits and steps: " + m);
            double predicted = r.predicted().stream()
                    .filter(p -> p.batchSize() == m.batchSize() && p.workers() == m.workers())
                    .findFirst()
                    .orElseThrow()
                    .imagesPerSecond();
            assertEquals(predicted, m.predictedImagesPerSecond(), 1e-9, m.toString());
            if (m.producerCpuSeconds() >= 0) {
                // The kernel counts a process's CPU in ticks of 10 ms, a thread's in nanoseconds:
                // the difference of two process readings is short by up to two ticks.
                assertTrue(m.producerCpuSeconds() <= m.processCpuSeconds() + 0.02 + 1e-9, m.toString());
            }
            best = Math.max(best, m.imagesPerSecond());
        }
        TuneReport.Recommendation rec = r.recommendation();
        TuneReport.MeasuredOut chosen = r.measured().stream()
                .filter(m -> m.batchSize() == rec.batchSize() && m.workers() == rec.workers())
                .findFirst()
                .orElseThrow(() -> new AssertionError("the recommendation was not measured: " + rec));
        assertEquals(chosen.imagesPerSecond(), rec.imagesPerSecond(), 0);
        assertTrue(rec.imagesPerSecond() >= 0.97 * best, "within 3% of the best measured: " + rec);
        for (TuneReport.MeasuredOut m : r.measured()) {
            assertFalse(
                    m.workers() < rec.workers() && m.imagesPerSecond() >= 0.97 * best,
                    "fewer workers within 3% of the best should have won: " + m);
        }
        assertFalse(rec.why().isBlank());
        assertTrue(
                r.seconds().total() >= r.seconds().probes() + r.seconds().measuring() - 1e-9,
                r.seconds().toString());
        assertEquals(Runtime.getRuntime().availableProcessors(), r.machine().cores());
    }

    @Test
    void aModelBoundStepNeedsFewerWorkersThanALoaderBoundOneAndItsPredictionHolds() throws IOException {
        Assumptions.assumeTrue(
                Runtime.getRuntime().availableProcessors() >= 2, "one core: two workers cannot beat one");
        Path data = data();
        TuneReport.Report loaderBound = tune(data, tmp.resolve("fast"), "--step-ms", "0");
        TuneReport.Report modelBound = tune(data, tmp.resolve("slow"), "--step-ms", "100");
        assumeQuiet(loaderBound);
        assumeQuiet(modelBound);
        assertEquals(
                2,
                loaderBound.recommendation().workers(),
                loaderBound.recommendation().why());
        assertTrue(
                modelBound.recommendation().workers()
                        < loaderBound.recommendation().workers(),
                modelBound.recommendation().why());
        // A sleep of 100 ms per batch bounds it: the largest batch, and the rate the sleep allows.
        // A loader that did not decode while the consumer stepped would fall short by the decoding.
        TuneReport.Recommendation rec = modelBound.recommendation();
        assertEquals(32, rec.batchSize(), rec.why());
        assertEquals(320, rec.predictedImagesPerSecond(), 1e-6);
        assertEquals(
                rec.predictedImagesPerSecond(),
                rec.imagesPerSecond(),
                0.08 * rec.predictedImagesPerSecond(),
                rec.why());
        assertTrue(modelBound.measured().stream().allMatch(m -> m.stallFraction() < 0.05), "the step bounds it");
        assertTrue(
                loaderBound.measured().stream().allMatch(m -> m.stallFraction() > 0.5),
                "with no step the consumer waits on the loader");
        assertEquals("step", bound(modelBound, rec.batchSize(), rec.workers()));
        assertEquals("decode", bound(loaderBound, 16, 1));
    }

    private static String bound(TuneReport.Report r, int batchSize, int workers) {
        return r.predicted().stream()
                .filter(p -> p.batchSize() == batchSize && p.workers() == workers)
                .findFirst()
                .orElseThrow()
                .bound();
    }

    /**
     * Links planted at tune.json, tune.png and the fixed partial names an older Stoke wrote through,
     * in an output folder others can write: both files are written over them, never through, and
     * the targets keep their bytes.
     */
    @Test
    void theReportAndThePlotAreWrittenOverPlantedLinksNeverThroughThem() throws IOException {
        Path out = Files.createDirectories(tmp.resolve("linked"));
        Path victims = Files.createDirectories(tmp.resolve("victims"));
        List<String> names = List.of("tune.json", "tune.png", ".tune.json.partial", ".tune.png.partial");
        for (String name : names) {
            Files.createSymbolicLink(out.resolve(name), Files.writeString(victims.resolve(name), "precious " + name));
        }
        tune(data(), out, "--step-ms", "5", "--batch-sizes", "16", "--max-workers", "1", "--seconds-per-point", "0.2");
        for (String name : names) {
            assertEquals("precious " + name, Files.readString(victims.resolve(name)), name + "'s target");
        }
        for (String name : List.of("tune.json", "tune.png")) {
            assertTrue(Files.isRegularFile(out.resolve(name), java.nio.file.LinkOption.NOFOLLOW_LINKS), name);
        }
        assertNotNull(ImageIO.read(out.resolve("tune.png").toFile()));
    }

    @Test
    void exhaustiveMeasuresEveryPointOnceAndDrawsThePlot() throws IOException {
        Path out = tmp.resolve("all");
        TuneReport.Report r =
                tune(data(), out, "--step-ms-per-image", "1", "--exhaustive", "--seconds-per-point", "0.3");
        assertEquals("exhaustive", r.mode());
        assertEquals(r.predicted().size(), r.measured().size(), "every point measured");
        assertEquals(1.0, r.consumer().stepMsPerImage(), 0);
        for (TuneReport.StepOut s : r.steps()) {
            assertEquals(s.batchSize() * 1.0, s.stepMs(), 1e-9, "a sleep of 1 ms per image");
            assertFalse(s.measured());
        }
        Path png = out.resolve("tune.png");
        byte[] head = Arrays.copyOf(Files.readAllBytes(png), 8);
        assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, head);
        BufferedImage image = ImageIO.read(png.toFile());
        assertNotNull(image, "a PNG ImageIO reads");
        assertTrue(image.getWidth() >= 600 && image.getHeight() >= 400, image.toString());
        try (Stream<Path> files = Files.list(out)) {
            assertEquals(
                    List.of("tune.json", "tune.png"),
                    files.map(p -> p.getFileName().toString()).sorted().toList(),
                    "no partial files left");
        }
    }

    @Test
    void anOnnxModelIsTimedAtEachBatchSizeOnTheLoadersBatches() throws IOException {
        Path out = tmp.resolve("onnx");
        TuneReport.Report r = tune(
                data(),
                out,
                "--model",
                EmbedCommandTest.F32,
                "--intra-op-threads",
                "1",
                "--output-name",
                "embedding",
                "--batch-sizes",
                "8,16");
        assertTrue(
                r.consumer().step().contains("tiny_cnn_f32.onnx"), r.consumer().step());
        assertEquals(1, r.consumer().intraOpThreads());
        for (TuneReport.StepOut s : r.steps()) {
            assertTrue(s.measured(), s.toString());
            assertTrue(s.stepMs() > 0, s.toString());
            assertTrue(s.modelCores() > 0 && s.modelCores() <= r.machine().cores(), s.toString());
        }
        assertTrue(r.dataset().transform().contains("float32"), "the model's float32 input: " + r.dataset());
    }

    @Test
    void badOptionsAreRefusedInOneSentence() {
        Path data = data();
        String out = tmp.resolve("out").toString();
        String d = data.toString();
        String[][] cases = {
            {"tune", d, "--out", out},
            {"tune", d, "--out", out, "--step-ms", "5", "--model", EmbedCommandTest.F32},
            {"tune", d, "--out", out, "--step-ms", "-1"},
            {"tune", d, "--out", out, "--step-ms", "5", "--workers", "2"},
            {"tune", d, "--out", out, "--step-ms", "5", "--batch-size", "8"},
            {"tune", d, "--out", out, "--step-ms", "5", "--epochs", "2"},
            {"tune", d, "--out", out, "--step-ms", "5", "--batch-sizes", "0,8"},
            {"tune", d, "--out", out, "--step-ms", "5", "--batch-sizes", "8,512"},
            {"tune", d, "--out", out, "--step-ms", "5", "--seconds-per-point", "0"},
            {"tune", d, "--out", out, "--step-ms", "5", "--candidates", "0"},
            {"tune", d, "--out", out, "--model", EmbedCommandTest.F32, "--transform", "train"},
        };
        for (String[] args : cases) {
            String[] r = BenchCommandTest.run(args);
            String what = String.join(" ", args);
            assertEquals("2", r[0], what + "\n" + r[1] + r[2]);
            List<String> lines =
                    r[2].lines().filter(l -> l.startsWith("stoke tune:")).toList();
            assertEquals(1, lines.size(), what + "\n" + r[2]);
            assertTrue(
                    lines.getFirst().endsWith(lines.getFirst().strip())
                            && !lines.getFirst().contains(". "),
                    lines.getFirst());
            assertFalse(Files.exists(tmp.resolve("out")), what + ": nothing written");
        }
        // A loader option's own check is the options table's, said as picocli says a bad value.
        String[] r = BenchCommandTest.run("tune", d, "--out", out, "--step-ms", "5", "--max-workers", "0");
        assertEquals("2", r[0], r[1] + r[2]);
        assertTrue(r[2].contains("--max-workers takes a whole number of at least 1, not '0'"), r[2]);
        assertFalse(Files.exists(tmp.resolve("out")), "nothing written");
    }
}
