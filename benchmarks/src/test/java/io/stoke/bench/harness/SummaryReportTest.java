package io.stoke.bench.harness;

import static io.stoke.bench.harness.AggregationTest.run;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SummaryReportTest {
    private static RunKey key(String loader, int workers, String start) {
        return new RunKey(loader, "jpeg", 256, workers, 0, start);
    }

    private static final String COLD = RunKey.COLD;
    private static final String WARM = RunKey.WARM;

    /** Cold and warm runs at 2 and 4 workers; each process took 0.5 s to start before its loader. */
    private static final List<RunResult> RUNS = List.of(
            run(key("stoke", 2, COLD), 0, 1000, 2.0, 300, 20, 20, 20, 24),
            run(key("pytorch", 2, COLD), 0, 1000, 5.0, 2500, 1, 1, 1, 500),
            run(key("stoke", 4, COLD), 0, 1000, 1.6, 280, 20, 20, 20, 20),
            run(key("pytorch", 4, COLD), 0, 1000, 4.0, 3500, 1, 1, 1, 400),
            run(key("stoke", 2, WARM), 0, 1000, 1.0, 100, 10, 10, 10, 12),
            run(key("pytorch", 2, WARM), 0, 1000, 4.0, 2000, 1, 1, 1, 400),
            run(key("stoke", 4, WARM), 0, 1000, 1.25, 90, 10, 10, 10, 10),
            run(key("pytorch", 4, WARM), 0, 1000, 2.0, 3000, 1, 1, 1, 300));

    private static String render(List<RunResult> runs) {
        return SummaryReport.render(
                Aggregate.of(runs),
                new ReportInfo("2 cores, Test CPU, 4 GiB", 2, 2048, List.of("condition one"), List.of(), List.of()));
    }

    @Test
    void headlineSetsColdAndWarmSideBySide() {
        String md = render(RUNS);
        assertTrue(md.contains("Machine: 2 cores, Test CPU, 4 GiB"), md);
        assertTrue(md.contains("- condition one"), md);
        assertTrue(md.contains("- **cold: a fresh process, as a user starts it.**"), md);
        assertTrue(md.contains("- **warm (steady: after 2048 images untimed in the same process).**"), md);
        assertTrue(
                md.contains(
                        "| workers | figure | Stoke cold | PyTorch (PIL) cold | Stoke warm | PyTorch (PIL) warm |\n"),
                md);
        assertTrue(
                md.contains("| 2 | images/s | 500 | 200 | 1000 | 250 |\n"
                        + "| 2 | first batch ms | 300 | 2500 | 100 | 2000 |\n"
                        + "| 2 | process start → first batch ms | 800 | 3000 | – | – |\n"
                        + "| 4 | images/s | 625 | 250 | 800 | 500 |\n"
                        + "| 4 | first batch ms | 280 | 3500 | 90 | 3000 |\n"
                        + "| 4 | process start → first batch ms | 780 | 4000 | – | – |\n"),
                md);
    }

    @Test
    void bestSettingsAndTheirRatioForEachStart() {
        String md = render(RUNS);
        String cold = md.substring(
                md.indexOf("**Best settings of each loader, cold**"),
                md.indexOf("**Best settings of each loader, warm**"));
        assertTrue(cold.contains("- Stoke: **625 images/s** (batch 256, 4 workers, model 0 ms; 1 repeat)"), cold);
        assertTrue(cold.contains("- PyTorch (PIL): **250 images/s** (batch 256, 4 workers"), cold);
        assertTrue(
                cold.contains("Ratio of the bests, cold: Stoke / PyTorch's fastest path here (PyTorch (PIL)) = 2.50x"),
                cold);
        assertTrue(
                cold.contains("Matched, at PyTorch (PIL)'s best settings (batch 256, 4 workers, model 0 ms): "
                        + "Stoke 625 images/s, ratio 2.50x"),
                cold);
        String warm = md.substring(md.indexOf("**Best settings of each loader, warm**"));
        assertTrue(warm.contains("- Stoke: **1000 images/s** (batch 256, 2 workers"), warm);
        assertTrue(warm.contains("- PyTorch (PIL): **500 images/s** (batch 256, 4 workers"), warm);
        assertTrue(
                warm.contains("Ratio of the bests, warm: Stoke / PyTorch's fastest path here (PyTorch (PIL)) = 2.00x"),
                warm);
        // Matched: Stoke warm at PyTorch's best settings (4 workers): 800 images/s.
        assertTrue(
                warm.contains("Matched, at PyTorch (PIL)'s best settings (batch 256, 4 workers, model 0 ms): "
                        + "Stoke 800 images/s, ratio 1.60x"),
                warm);
        assertTrue(md.contains("- Stoke cold: 1.0 (p50 20.00 ms, p99 20.00 ms)"), md);
        assertTrue(md.contains("- PyTorch (PIL) warm: "), md);
        assertTrue(
                md.contains(
                        "Stoke cold 300 MB PSS (400 MB RSS); PyTorch (PIL) cold 300 MB PSS (400 MB RSS); Stoke warm"),
                md);
    }

    @Test
    void everySweepPointHasItsStartAndProcessStartToFirstBatch() {
        String md = render(RUNS);
        assertTrue(
                md.contains("| loader | start | dataset | batch | workers | model ms/batch | runs | images/s "
                        + "| first batch ms | process start → first batch ms |"),
                md);
        assertTrue(md.contains("| stoke | cold | jpeg | 256 | 2 | 0 | 1 | 500 | 300 | 800 | 20.00 |"), md);
        assertTrue(md.contains("| pytorch | warm | jpeg | 256 | 4 | 0 | 1 | 500 | 3000 | 3500 | 1.00 |"), md);
        assertEquals(
                8,
                md.lines()
                        .filter(l -> l.startsWith("| stoke |") || l.startsWith("| pytorch |"))
                        .count(),
                md);
    }

    @Test
    void aSweepOfOneStartShowsThatStartAlone() {
        String md =
                render(RUNS.stream().filter(r -> r.key().start().equals(WARM)).toList());
        assertTrue(md.contains("| workers | figure | Stoke warm | PyTorch (PIL) warm |\n"), md);
        assertTrue(md.contains("| 4 | first batch ms | 90 | 3000 |\n"), md);
        assertFalse(md.contains("| 4 | process start → first batch ms"), md);
        assertFalse(md.contains("cold: a fresh process"), md);
        assertTrue(
                md.contains("Ratio of the bests, warm: Stoke / PyTorch's fastest path here (PyTorch (PIL)) = 2.00x"),
                md);
    }

    /**
     * With torch's tensor path beside its PIL path, the headline ratio is against whichever of
     * them is faster, named; the other's ratio follows, and the matched comparison is at the
     * faster one's settings.
     */
    @Test
    void theHeadlineRatioIsAgainstPyTorchsFastestPath() {
        List<RunResult> runs = new java.util.ArrayList<>(RUNS);
        // Warm: the tensor path 800 images/s at 2 workers, 700 at 4; PIL's best is 500 (4 workers).
        runs.add(run(key("pytorch-tensor", 2, WARM), 0, 1000, 1.25, 1500, 1, 1, 1, 300));
        runs.add(run(key("pytorch-tensor", 4, WARM), 0, 1000, 1000 / 700.0, 1500, 1, 1, 1, 300));
        runs.add(run(key("torchdata-nodes", 2, WARM), 0, 1000, 2.5, 1200, 1, 1, 1, 300));
        String md = render(runs);
        String warm = md.substring(md.indexOf("**Best settings of each loader, warm**"));
        assertTrue(warm.contains("- PyTorch (decode_jpeg + v2): **800 images/s** (batch 256, 2 workers"), warm);
        assertTrue(warm.contains("- torchdata.nodes: **400 images/s**"), warm);
        assertTrue(
                warm.contains("**Ratio of the bests, warm: Stoke / PyTorch's fastest path here "
                        + "(PyTorch (decode_jpeg + v2)) = 1.25x**"),
                warm);
        assertTrue(warm.contains("- Ratio of the bests, warm: Stoke / PyTorch (PIL) = 2.00x"), warm);
        assertTrue(warm.contains("- Ratio of the bests, warm: Stoke / torchdata.nodes = 2.50x"), warm);
        // Stoke warm at 2 workers: 1000 images/s.
        assertTrue(
                warm.contains("Matched, at PyTorch (decode_jpeg + v2)'s best settings (batch 256, 2 workers, "
                        + "model 0 ms): Stoke 1000 images/s, ratio 1.25x"),
                warm);
        // Cold has no tensor run: its ratio stays against the PIL path, which is then the fastest.
        String cold = md.substring(
                md.indexOf("**Best settings of each loader, cold**"),
                md.indexOf("**Best settings of each loader, warm**"));
        assertTrue(cold.contains("Stoke / PyTorch's fastest path here (PyTorch (PIL)) = 2.50x"), cold);
        assertTrue(
                md.contains("| workers | figure | Stoke cold | PyTorch (PIL) cold | PyTorch (decode_jpeg + v2) cold "
                        + "| torchdata.nodes cold | Stoke warm | PyTorch (PIL) warm | PyTorch (decode_jpeg + v2) warm "
                        + "| torchdata.nodes warm |\n"),
                md);
        assertTrue(md.contains("| 2 | images/s | 500 | 200 | n/a | n/a | 1000 | 250 | 800 | 400 |\n"), md);
    }

    @Test
    void pixelDifferencesAreTabledBesideTheSpeeds() {
        byte[] reference = {0, 10, (byte) 200, (byte) 255, 3, 3};
        PixelDifference same = PixelDifference.of("pytorch", reference, reference.clone(), 3);
        PixelDifference off =
                PixelDifference.of("stoke", reference, new byte[] {1, 7, (byte) 200, (byte) 250, 3, 3}, 3);
        assertEquals(0, same.meanAbs());
        assertEquals(0, same.maxAbs());
        assertEquals(2, off.images());
        assertEquals((1 + 3 + 5) / 6.0, off.meanAbs(), 1e-12);
        assertEquals(5, off.maxAbs());
        PixelDifference shorter = PixelDifference.of("pytorch-tensor", reference, new byte[3], 3);
        assertFalse(shorter.ok());
        assertTrue(shorter.error().contains("3 bytes") && shorter.error().contains("6"), shorter.error());
        String md = SummaryReport.render(
                List.of(),
                new ReportInfo(
                        "m",
                        2,
                        2048,
                        List.of(),
                        List.of(),
                        List.of(same, off, PixelDifference.failed("torchdata-nodes", "exit code 3; log: x.log"))));
        assertTrue(
                md.contains("| loader | images | mean absolute difference | largest |\n|---|---:|---:|---:|\n"
                        + "| PyTorch (PIL) | 2 | 0.000 | 0 |\n"
                        + "| Stoke | 2 | 1.500 | 5 |\n"
                        + "| torchdata.nodes | not compared: exit code 3; log: x.log | | |\n"),
                md);
    }

    /** torch_loader.py's advice when torch is missing runs over several lines, a blank one included. */
    @Test
    void aMultiLineNoteIsOneBlockquote() {
        String note =
                "PyTorch's DataLoader was not run: cannot import torch.\n  On Debian: apt-get install python3-torch\n\n"
                        + "  then pass --python PATH.";
        String md = SummaryReport.render(List.of(), new ReportInfo("m", 2, 2048, List.of(), List.of(note), List.of()));
        assertEquals(1, md.split("\\*\\*Note:\\*\\*", -1).length - 1, md);
        assertTrue(
                md.contains("> **Note:** PyTorch's DataLoader was not run: cannot import torch.\n"
                        + ">   On Debian: apt-get install python3-torch\n>\n>   then pass --python PATH.\n\n"),
                md);
    }

    @Test
    void reportInfoRoundTripsThroughReportJson(@TempDir Path tmp) {
        ReportInfo info = new ReportInfo(
                "2 cores available to the JVM, Test CPU",
                2,
                2048,
                List.of("condition, \"one\"", "two"),
                List.of("first line\n  second line\n\nfourth"),
                List.of(
                        PixelDifference.of("stoke", new byte[] {0, 10, (byte) 200}, new byte[] {1, 7, (byte) 200}, 3),
                        PixelDifference.failed("torchdata-nodes", "exit code 3")));
        info.write(tmp);
        assertEquals(info, ReportInfo.read(tmp));
    }
}
