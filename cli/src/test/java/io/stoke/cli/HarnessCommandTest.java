package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The harness end to end on a tiny dataset: child processes started, every batch in the CSV, the
 * summary and plots written. PyTorch takes part when /usr/bin/python3 can import it; otherwise the
 * summary must say why it did not.
 */
class HarnessCommandTest {
    @TempDir
    Path tmp;

    @Test
    void sweepsBothDatasetsAndWritesCsvSummaryAndPlots() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("jpeg"), 12, 2, 5);
        Path out = tmp.resolve("out");
        String[] r = BenchCommandTest.run("harness", "--out", out.toString(), "--dataset", data.toString(),
                "--batch-sizes", "4", "--workers", "1,2", "--model-ms-per-image", "1", "--warmup-images", "0",
                "--sample-ms", "20");
        assertEquals("0", r[0], r[1] + r[2]);
        List<String> runs = Files.readAllLines(out.resolve("runs.csv"));
        List<String> batches = Files.readAllLines(out.resolve("batches.csv"));
        boolean torch = runs.stream().anyMatch(l -> l.startsWith("pytorch,"));
        int loaders = torch ? 2 : 1;
        // 2 datasets x 1 batch size x 2 worker counts x 2 model times x loaders, one repeat.
        assertEquals(1 + 8 * loaders, runs.size(), String.join("\n", runs));
        // 12 images in batches of 4: 3 batches a run.
        assertEquals(1 + 3 * 8 * loaders, batches.size());
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
        assertTrue(torch || md.contains("PyTorch's DataLoader was not run"), md);
        assertTrue(Files.size(out.resolve("plots/per-batch-wait-b4-w2.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/images-per-s-vs-workers-jpeg-nomodel.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/time-to-first-batch-vs-batch-size.png")) > 1000);
        assertTrue(Files.size(out.resolve("plots/memory-vs-workers.png")) > 1000);
        // --report-only redraws the summary and plots from the CSVs alone.
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
