package io.stoke.bench.harness;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;
import io.stoke.loader.testing.CapturedRun;
import io.stoke.loader.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The harness end to end on a tiny dataset: child processes started, every batch in the CSV, the
 * summary and plots written. The main sweep runs against a Python that cannot import torch, so
 * that it takes the same path on every machine; a second test runs PyTorch's side where
 * /usr/bin/python3 can import torch and torchvision.
 */
class HarnessCommandTest {
    private static final Path SYSTEM_PYTHON = Path.of("/usr/bin/python3");

    @TempDir
    Path tmp;

    /**
     * A Python that starts but cannot import torch: {@code -S} leaves site-packages (and with them
     * torch, numpy and PIL) off the path, so torch_loader.py exits with its multi-line advice.
     */
    private Path pythonWithoutTorch() throws Exception {
        Path p = tmp.resolve("python-without-site-packages");
        Files.writeString(p, "#!/bin/sh\nexec " + SYSTEM_PYTHON + " -S \"$@\"\n");
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        return p;
    }

    /** The harness's command line run in this JVM: {exit code, stdout, stderr}. */
    static String[] run(String... args) {
        return CapturedRun.of(() -> HarnessMain.execute(args));
    }

    @Test
    void stokeRunsStartFromTheJarAsTheLauncherStartsStokeSoTheAotCacheApplies() {
        // --add-exports would turn the archived module graph off, and the JVM then refuses the AOT
        // cache: from the jar, its manifest opens what Stoke needs instead.
        assertEquals(
                List.of(
                        "/jdk/bin/java",
                        "-XX:AOTCache=/s/benchmarks/target/benchmarks.aot",
                        "-XX:TieredStopAtLevel=1",
                        "-Xmx384m",
                        "-jar",
                        "/s/benchmarks/target/benchmarks.jar"),
                HarnessCommand.stokeJava(
                        "/jdk/bin/java",
                        "/s/benchmarks/target/benchmarks.jar",
                        List.of(
                                "-XX:AOTCache=/s/benchmarks/target/benchmarks.aot",
                                "-Xmx384m",
                                "-XX:TieredStopAtLevel=1",
                                "-Dstoke.root=/s")));
        // From class folders (the tests), the options are given on the command line and no AOT cache.
        List<String> fromClasses = HarnessCommand.stokeJava(
                "/jdk/bin/java",
                "/s/benchmarks/target/classes:/m/loader.jar",
                List.of("-XX:AOTCache=/s/benchmarks/target/benchmarks.aot", "-XX:TieredStopAtLevel=1"));
        assertEquals(
                List.of(
                        "/jdk/bin/java",
                        "-XX:TieredStopAtLevel=1",
                        "-Xmx384m",
                        "--enable-native-access=ALL-UNNAMED",
                        "--add-exports",
                        "java.base/jdk.internal.misc=ALL-UNNAMED",
                        "-cp",
                        "/s/benchmarks/target/classes:/m/loader.jar",
                        HarnessMain.class.getName()),
                fromClasses);
    }

    @Test
    void sweepsBothDatasetsAndWritesCsvSummaryAndPlots() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("jpeg"), 12, 2, 5);
        Path out = tmp.resolve("out");
        String[] r = run(
                "harness",
                "--out",
                out.toString(),
                "--dataset",
                data.toString(),
                "--batch-sizes",
                "4",
                "--workers",
                "1,2",
                "--model-ms-per-image",
                "1",
                "--warmup-images",
                "8",
                "--sample-ms",
                "20",
                "--python",
                pythonWithoutTorch().toString());
        assertEquals("0", r[0], r[1] + r[2]);
        List<Map<String, String>> runs = csv(out.resolve("runs.csv"));
        List<Map<String, String>> batches = csv(out.resolve("batches.csv"));
        // 2 datasets x 1 batch size x 2 worker counts x 2 model times x cold and warm, Stoke alone, one repeat.
        assertEquals(16, runs.size(), runs.toString());
        assertTrue(runs.stream().allMatch(x -> x.get("loader").equals("stoke")), runs.toString());
        assertEquals(8, runs.stream().filter(x -> x.get("start").equals("cold")).count(), runs.toString());
        assertEquals(8, runs.stream().filter(x -> x.get("start").equals("warm")).count(), runs.toString());
        // 12 images in batches of 4: 3 batches a run.
        assertEquals(3 * 16, batches.size());
        assertEquals(
                List.of("0", "1", "2"),
                batches.stream()
                        .filter(x -> x.get("dataset").equals("raw")
                                && x.get("workers").equals("2")
                                && x.get("model_ms").equals("4")
                                && x.get("start").equals("warm"))
                        .map(x -> x.get("batch_index"))
                        .toList());
        // A warm run's process took the warm-up images untimed first; a cold one nothing.
        for (String dataset : List.of("jpeg", "raw")) {
            assertEquals(
                    8,
                    RunFigures.read(out.resolve("runs/stoke-" + dataset + "-b4-w2-m0-warm-r1.json"))
                            .warmupImages());
            assertEquals(
                    0,
                    RunFigures.read(out.resolve("runs/stoke-" + dataset + "-b4-w2-m0-cold-r1.json"))
                            .warmupImages());
        }
        for (Map<String, String> x : runs) {
            assertEquals("12", x.get("images"), x.toString());
            assertEquals("", x.get("error"), x.toString());
            assertTrue(Double.parseDouble(x.get("peak_pss_mb")) > 0, "peak PSS measured: " + x);
            assertTrue(Double.parseDouble(x.get("cpu_s")) >= 0, "CPU time measured: " + x);
            // From the process's start, so JVM start comes on top of the loader's first batch.
            assertTrue(
                    Double.parseDouble(x.get("process_start_to_first_batch_ms"))
                            > Double.parseDouble(x.get("time_to_first_batch_ms")),
                    x.toString());
            if (x.get("model_ms").equals("4")) {
                // Model time 4 ms a batch: 3 batches cannot take less than 12 ms.
                assertTrue(Double.parseDouble(x.get("elapsed_s")) >= 0.012, x.toString());
            }
        }
        String md = Files.readString(out.resolve("summary.md"));
        assertTrue(md.contains("Machine: ") && md.contains("Stoke: **"), md);
        assertTrue(md.contains("| workers | figure | Stoke cold | Stoke warm |"), md);
        assertTrue(md.contains("| 2 | process start → first batch ms | "), md);
        assertTrue(md.contains("**Warm** runs (start `warm`, the steady state) first take 8 images untimed"), md);
        // torch_loader.py's advice runs over several lines: one note, one blockquote.
        assertEquals(1, md.split("\\*\\*Note:\\*\\*", -1).length - 1, md);
        List<String> lines = md.lines().toList();
        int note = lines.indexOf(lines.stream()
                .filter(l -> l.startsWith("> **Note:** "))
                .findFirst()
                .orElseThrow());
        assertTrue(lines.get(note).contains("PyTorch's DataLoader was not run: torch_loader.py: cannot import"), md);
        assertTrue(lines.get(note + 1).startsWith("> ") && lines.get(note + 1).contains("apt-get install"), md);
        assertTrue(Files.size(out.resolve("plots/per-batch-wait-b4-w2.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/images-per-s-vs-workers-jpeg-nomodel.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/time-to-first-batch-vs-batch-size.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/memory-vs-workers.png")) > 1000);
        // --report-only redraws the summary and plots from the files alone, byte for byte.
        String before = Files.readString(out.resolve("summary.md"));
        assertTrue(before.contains("Regenerate: `./stoke harness --out " + out + " --dataset "), before);
        Files.delete(out.resolve("summary.md"));
        Files.delete(out.resolve("plots/memory-vs-workers.png"));
        String[] again = run("harness", "--out", out.toString(), "--report-only");
        assertEquals("0", again[0], again[1] + again[2]);
        assertEquals(before, Files.readString(out.resolve("summary.md")));
        assertTrue(Files.size(out.resolve("plots/memory-vs-workers.png")) > 1000);
        try (var files = Files.walk(out.resolve("data"))) {
            assertEquals(12, files.filter(p -> p.toString().endsWith(".raw")).count(), "the preprocessed set");
        }
        // Stoke's raw runs read the raw shards packed beside the .raw files, through the real Loader.
        assertTrue(Files.isRegularFile(out.resolve("data/raw224-jpeg-shards/index.json")));
        String rawRun = Files.readString(out.resolve("logs/stoke-raw-b4-w2-m0-cold-r1.log"));
        assertTrue(
                rawRun.lines()
                        .findFirst()
                        .orElseThrow()
                        .contains(" harness-run " + out.resolve("data/raw224-jpeg-shards") + " --dataset raw "),
                rawRun);
        assertTrue(r[2].contains("as raw shards in ") && r[2].contains("(packed)"), r[2]);
        // A second sweep into the same folder reuses the preprocessed data.
        String[] reuse = run(
                "harness",
                "--out",
                out.toString(),
                "--dataset",
                data.toString(),
                "--batch-sizes",
                "4",
                "--workers",
                "1",
                "--no-model",
                "--datasets",
                "raw",
                "--starts",
                "cold",
                "--sample-ms",
                "20",
                "--python",
                pythonWithoutTorch().toString());
        assertEquals("0", reuse[0], reuse[1] + reuse[2]);
        assertTrue(reuse[2].contains("(reused) and as .raw files in ") && reuse[2].contains(" (reused) ("), reuse[2]);
    }

    @Test
    void runsPyTorchsSideWhereTorchIsInstalled() throws Exception {
        Assumptions.assumeTrue(
                imports(SYSTEM_PYTHON, "torch, torchvision"),
                SYSTEM_PYTHON
                        + " cannot import torch and torchvision: PyTorch's side of the harness is not tested here "
                        + "(apt-get install python3-torch python3-torchvision)");
        Path data = TestImages.imageFolder(tmp.resolve("jpeg"), 8, 2, 7);
        Path out = tmp.resolve("out");
        String[] r = run(
                "harness",
                "--out",
                out.toString(),
                "--dataset",
                data.toString(),
                "--batch-sizes",
                "4",
                "--workers",
                "1",
                "--no-model",
                "--warmup-images",
                "8",
                "--sample-ms",
                "20",
                "--python",
                SYSTEM_PYTHON.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        List<Map<String, String>> runs = csv(out.resolve("runs.csv"));
        List<Map<String, String>> torch =
                runs.stream().filter(x -> x.get("loader").equals("pytorch")).toList();
        assertEquals(
                List.of("jpeg cold", "jpeg warm", "raw cold", "raw warm"),
                torch.stream().map(x -> x.get("dataset") + " " + x.get("start")).toList(),
                runs.toString());
        // torch's tensor path on the JPEG files only (on the raw files it would be the PIL path again).
        assertEquals(
                List.of("jpeg cold", "jpeg warm"),
                runs.stream()
                        .filter(x -> x.get("loader").equals("pytorch-tensor"))
                        .map(x -> x.get("dataset") + " " + x.get("start"))
                        .toList(),
                runs.toString());
        // Debian 12 has no torchdata: its loader is left out, saying why, as are the peers with no loader.
        assertTrue(runs.stream().noneMatch(x -> x.get("loader").equals("torchdata-nodes")), runs.toString());
        String notes = Files.readString(out.resolve("summary.md"));
        assertTrue(notes.contains("> **Note:** torchdata-nodes left out: cannot import torchdata.nodes with "), notes);
        assertTrue(notes.contains("> **Note:** spdl left out: cannot import spdl"), notes);
        // Each loader's first batch against torchvision's PIL path: the PIL path itself exactly, the
        // others near it (a uint8 resize and a decoder of their own: a few levels, not another image).
        ReportInfo info = ReportInfo.read(out);
        assertEquals(
                List.of("stoke", "pytorch", "pytorch-tensor"),
                info.pixelDifferences().stream().map(PixelDifference::loader).toList(),
                info.toString());
        for (PixelDifference d : info.pixelDifferences()) {
            assertTrue(d.ok(), d.toString());
            assertEquals(8, d.images(), d.toString());
            if (d.loader().equals("pytorch")) {
                assertEquals(0, d.maxAbs(), d.toString());
            } else {
                assertTrue(d.meanAbs() < 2, d.toString());
            }
        }
        assertTrue(notes.contains("| PyTorch (PIL) | 8 | 0.000 | 0 |"), notes);
        assertEquals(
                8,
                RunFigures.read(out.resolve("runs/pytorch-jpeg-b4-w1-m0-warm-r1.json"))
                        .warmupImages());
        // PyTorch's raw runs read the .raw files (numpy.fromfile), Stoke's the shards of the same bytes.
        assertTrue(Files.readString(out.resolve("logs/pytorch-raw-b4-w1-m0-cold-r1.log"))
                .lines()
                .findFirst()
                .orElseThrow()
                .contains(" " + out.resolve("data/raw224-jpeg") + " --loader pytorch --dataset raw "));
        for (Map<String, String> x : torch) {
            assertEquals("8", x.get("images"), x.toString());
            assertEquals("", x.get("error"), x.toString());
            // Python's start and torch's imports come on top of the loader's first batch.
            assertTrue(
                    Double.parseDouble(x.get("process_start_to_first_batch_ms"))
                            > Double.parseDouble(x.get("time_to_first_batch_ms")),
                    x.toString());
        }
        String md = Files.readString(out.resolve("summary.md"));
        assertTrue(md.contains("PyTorch (PIL): **") && md.contains("torch "), md);
        assertTrue(md.contains("| 1 | images/s | "), md);
        assertFalse(md.lines().filter(l -> l.startsWith("| 1 | ")).anyMatch(l -> l.contains("n/a")), md);
    }

    @Test
    void theTrainTransformRunsOnBothSides() throws Exception {
        Assumptions.assumeTrue(
                imports(SYSTEM_PYTHON, "torch, torchvision"),
                SYSTEM_PYTHON
                        + " cannot import torch and torchvision: the harness's train transform is not tested here");
        Path data = TestImages.imageFolder(tmp.resolve("jpeg"), 8, 2, 8);
        Path out = tmp.resolve("out");
        String[] r = run(
                "harness",
                "--out",
                out.toString(),
                "--dataset",
                data.toString(),
                "--transform",
                "train",
                "--batch-sizes",
                "4",
                "--workers",
                "1",
                "--no-model",
                "--datasets",
                "jpeg",
                "--starts",
                "cold",
                "--sample-ms",
                "20",
                "--python",
                SYSTEM_PYTHON.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        List<Map<String, String>> runs = csv(out.resolve("runs.csv"));
        assertEquals(
                List.of("stoke", "pytorch", "pytorch-tensor"),
                runs.stream().map(x -> x.get("loader")).toList(),
                runs.toString());
        runs.forEach(x -> assertEquals("8", x.get("images"), x.toString()));
        String md = Files.readString(out.resolve("summary.md"));
        assertTrue(md.contains("RandomResizedCrop(224), RandomHorizontalFlip()"), md);
        assertTrue(Files.readString(out.resolve("logs/pytorch-jpeg-b4-w1-m0-cold-r1.log"))
                .contains("--transform train"));
        assertTrue(Files.readString(out.resolve("logs/pytorch-tensor-jpeg-b4-w1-m0-cold-r1.log"))
                .contains(" --loader pytorch-tensor --dataset jpeg "));
        String[] bad = run("harness", "--out", out.toString(), "--transform", "augment");
        assertNotEquals("0", bad[0]);
    }

    private static boolean imports(Path python, String modules) throws Exception {
        if (!Files.isExecutable(python)) {
            return false;
        }
        Process p = new ProcessBuilder(python.toString(), "-c", "import " + modules)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        return p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0;
    }

    @Test
    void aMissingPythonIsReportedAndStokeStillRuns() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("jpeg"), 8, 2, 6);
        Path out = tmp.resolve("out");
        String[] r = run(
                "harness",
                "--out",
                out.toString(),
                "--dataset",
                data.toString(),
                "--batch-sizes",
                "4",
                "--workers",
                "1",
                "--no-model",
                "--datasets",
                "jpeg",
                "--warmup-images",
                "0",
                "--python",
                tmp.resolve("no-python").toString());
        assertEquals("0", r[0], r[1] + r[2]);
        String md = Files.readString(out.resolve("summary.md"));
        assertTrue(md.contains("PyTorch's DataLoader was not run") && md.contains("no-python"), md);
        assertEquals(2, csv(out.resolve("runs.csv")).size(), "Stoke, cold and warm");
    }

    /** A CSV file's rows, each a map from its header's names to the cells. */
    static List<Map<String, String>> csv(Path file) throws Exception {
        try (MappingIterator<Map<String, String>> it = new CsvMapper()
                .readerForMapOf(String.class)
                .with(CsvSchema.emptySchema().withHeader())
                .readValues(file.toFile())) {
            return it.readAll();
        }
    }
}
