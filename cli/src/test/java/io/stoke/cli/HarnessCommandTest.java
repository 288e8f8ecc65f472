package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
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

    @Test
    void sweepsBothDatasetsAndWritesCsvSummaryAndPlots() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("jpeg"), 12, 2, 5);
        Path out = tmp.resolve("out");
        String[] r = BenchCommandTest.run("harness", "--out", out.toString(), "--dataset", data.toString(),
                "--batch-sizes", "4", "--workers", "1,2", "--model-ms-per-image", "1", "--warmup-images", "0",
                "--sample-ms", "20", "--python", pythonWithoutTorch().toString());
        assertEquals("0", r[0], r[1] + r[2]);
        List<String> runs = Files.readAllLines(out.resolve("runs.csv"));
        List<String> batches = Files.readAllLines(out.resolve("batches.csv"));
        // 2 datasets x 1 batch size x 2 worker counts x 2 model times, Stoke alone, one repeat.
        assertEquals(1 + 8, runs.size(), String.join("\n", runs));
        assertTrue(runs.stream().noneMatch(l -> l.startsWith("pytorch,")), String.join("\n", runs));
        // 12 images in batches of 4: 3 batches a run.
        assertEquals(1 + 3 * 8, batches.size());
        assertEquals(List.of("0", "1", "2"), batches.stream().filter(l -> l.startsWith("stoke,raw,4,2,4,0,"))
                .map(l -> l.split(",")[6]).toList());
        for (String line : runs.subList(1, runs.size())) {
            String[] f = line.split(",", -1);
            assertEquals("12", f[6], line);
            assertTrue(Double.parseDouble(f[13]) > 0, "peak PSS measured: " + line);
            assertTrue(Double.parseDouble(f[16]) >= 0, "CPU time measured: " + line);
        }
        // Model time 4 ms a batch: 3 batches cannot take less than 12 ms.
        runs.stream().filter(l -> l.contains(",4,0,12,")).forEach(l ->
                assertTrue(Double.parseDouble(l.split(",")[8]) >= 0.012, l));
        String md = Files.readString(out.resolve("summary.md"));
        assertTrue(md.contains("Machine: ") && md.contains("Stoke: **"), md);
        // torch_loader.py's advice runs over several lines: one note, one blockquote.
        assertEquals(1, md.split("\\*\\*Note:\\*\\*", -1).length - 1, md);
        List<String> lines = md.lines().toList();
        int note = lines.indexOf(lines.stream().filter(l -> l.startsWith("> **Note:** ")).findFirst().orElseThrow());
        assertTrue(lines.get(note).contains("PyTorch's DataLoader was not run: torch_loader.py: cannot import"), md);
        assertTrue(lines.get(note + 1).startsWith("> ") && lines.get(note + 1).contains("apt-get install"), md);
        assertTrue(Files.size(out.resolve("plots/per-batch-wait-b4-w2.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/images-per-s-vs-workers-jpeg-nomodel.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/time-to-first-batch-vs-batch-size.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/memory-vs-workers.png")) > 1000);
        // --report-only redraws the summary and plots from the files alone, byte for byte.
        String before = Files.readString(out.resolve("summary.md"));
        Files.delete(out.resolve("summary.md"));
        Files.delete(out.resolve("plots/memory-vs-workers.png"));
        String[] again = BenchCommandTest.run("harness", "--out", out.toString(), "--report-only");
        assertEquals("0", again[0], again[1] + again[2]);
        assertEquals(before, Files.readString(out.resolve("summary.md")));
        assertTrue(Files.size(out.resolve("plots/memory-vs-workers.png")) > 1000);
        try (var files = Files.walk(out.resolve("data"))) {
            assertEquals(12, files.filter(p -> p.toString().endsWith(".raw")).count(), "the preprocessed set");
        }
    }

    @Test
    void runsPyTorchsSideWhereTorchIsInstalled() throws Exception {
        Assumptions.assumeTrue(imports(SYSTEM_PYTHON, "torch, torchvision"),
                SYSTEM_PYTHON + " cannot import torch and torchvision: PyTorch's side of the harness is not tested here "
                        + "(apt-get install python3-torch python3-torchvision)");
        Path data = TestImages.imageFolder(tmp.resolve("jpeg"), 8, 2, 7);
        Path out = tmp.resolve("out");
        String[] r = BenchCommandTest.run("harness", "--out", out.toString(), "--dataset", data.toString(),
                "--batch-sizes", "4", "--workers", "1", "--no-model", "--datasets", "jpeg", "--warmup-images", "0",
                "--sample-ms", "20", "--python", SYSTEM_PYTHON.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        List<String> runs = Files.readAllLines(out.resolve("runs.csv"));
        List<String> torch = runs.stream().filter(l -> l.startsWith("pytorch,jpeg,4,1,")).toList();
        assertEquals(1, torch.size(), String.join("\n", runs));
        assertEquals("8", torch.get(0).split(",", -1)[6], torch.get(0));
        String md = Files.readString(out.resolve("summary.md"));
        assertFalse(md.contains("**Note:**"), md);
        assertTrue(md.contains("PyTorch: **") && md.contains("torch "), md);
    }

    private static boolean imports(Path python, String modules) throws Exception {
        if (!Files.isExecutable(python)) {
            return false;
        }
        Process p = new ProcessBuilder(python.toString(), "-c", "import " + modules).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        return p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0;
    }

    @Test
    void aMissingPythonIsReportedAndStokeStillRuns() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("jpeg"), 8, 2, 6);
        Path out = tmp.resolve("out");
        String[] r = BenchCommandTest.run("harness", "--out", out.toString(), "--dataset", data.toString(),
                "--batch-sizes", "4", "--workers", "1", "--no-model", "--datasets", "jpeg", "--warmup-images", "0",
                "--python", tmp.resolve("no-python").toString());
        assertEquals("0", r[0], r[1] + r[2]);
        String md = Files.readString(out.resolve("summary.md"));
        assertTrue(md.contains("PyTorch's DataLoader was not run") && md.contains("no-python"), md);
        assertEquals(2, Files.readAllLines(out.resolve("runs.csv")).size());
    }
}
