package io.stoke.bench.harness;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AggregationTest {
    @TempDir
    Path tmp;

    private static final RunKey STOKE = new RunKey("stoke", "jpeg", 256, 2, 0, RunKey.WARM);
    private static final RunKey TORCH = new RunKey("pytorch", "jpeg", 256, 2, 0, RunKey.WARM);

    /** A run of {@code images} images in {@code seconds}, with these per-batch waits in ms. */
    static RunResult run(RunKey k, int repeat, long images, double seconds, double... waitsMs) {
        long[] w = new long[waitsMs.length];
        for (int i = 0; i < w.length; i++) {
            w[i] = Math.round(waitsMs[i] * 1e6);
        }
        // The process took 0.5 s to start before its loader did.
        double processStartToFirstBatchS = w.length == 0 ? Double.NaN : w[0] / 1e9 + 0.5;
        return new RunResult(
                k,
                repeat,
                images,
                seconds,
                w,
                processStartToFirstBatchS,
                400_000_000L,
                300_000_000L,
                450_000_000L,
                2.0,
                3.0,
                null);
    }

    @Test
    void waitQuantilesLeaveOutTheFirstBatch() {
        RunResult r = run(STOKE, 0, 1024, 2.0, 900, 1, 2, 3, 100);
        assertEquals(0.9, r.timeToFirstBatchS(), 1e-9);
        assertEquals(2.5, r.waitQuantileMs(0.5), 1e-9); // of 1 2 3 100
        assertEquals(3 + 0.97 * 97, r.waitQuantileMs(0.99), 1e-6);
        assertEquals(512, r.imagesPerSecond(), 1e-9);
        assertTrue(Double.isNaN(run(STOKE, 0, 10, 1, 5).waitQuantileMs(0.5)), "one batch has no steady-state waits");
    }

    @Test
    void aggregatesTakeMediansMinAndMaxOverRepeatsAndCountFailures() {
        List<RunResult> runs = List.of(
                run(STOKE, 0, 1000, 2.0, 100, 10, 10),
                run(STOKE, 1, 1000, 1.0, 300, 10, 30),
                run(STOKE, 2, 1000, 4.0, 200, 20, 20),
                run(TORCH, 0, 1000, 5.0, 1000, 1, 50),
                RunResult.failed(TORCH, 1, "boom"));
        List<Aggregate> aggs = Aggregate.of(runs);
        assertEquals(2, aggs.size());
        Aggregate s = Aggregate.find(aggs, STOKE);
        assertEquals(3, s.runs());
        assertEquals(0, s.failed());
        assertEquals(500, s.imagesPerS().median(), 1e-9);
        assertEquals(250, s.imagesPerS().min(), 1e-9);
        assertEquals(1000, s.imagesPerS().max(), 1e-9);
        assertEquals(200, s.ttfbMs().median(), 1e-6);
        assertEquals(300, s.pssMb().median(), 1e-9);
        assertEquals(2.0, s.cpuMsPerImage().median(), 1e-9);
        Aggregate t = Aggregate.find(aggs, TORCH);
        assertEquals(1, t.runs());
        assertEquals(1, t.failed());
        assertEquals(200, t.imagesPerS().median(), 1e-9);
        assertSame(s, Aggregate.best(aggs, a -> true));
        assertSame(t, Aggregate.best(aggs, a -> a.key().loader().equals("pytorch")));
        assertNull(Aggregate.best(aggs, a -> a.key().dataset().equals("raw")));
    }

    @Test
    void csvFilesHoldOneRowPerBatchAndPerRun() throws Exception {
        List<RunResult> runs = List.of(
                run(STOKE, 0, 10, 1.0, 5, 0.25),
                run(TORCH, 1, 10, 2.0, 7, 1.5, 2),
                RunResult.failed(
                        new RunKey("pytorch", "raw", 32, 1, 128, RunKey.COLD), 0, "exit code 3, \"torch\" missing"));
        ResultFiles.write(tmp, runs);
        List<String> b = Files.readAllLines(tmp.resolve("batches.csv"));
        assertEquals(ResultFiles.BATCHES_HEADER, b.get(0));
        assertEquals(
                List.of(
                        "stoke,jpeg,256,2,0,warm,0,0,5.000000",
                        "stoke,jpeg,256,2,0,warm,0,1,0.250000",
                        "pytorch,jpeg,256,2,0,warm,1,0,7.000000",
                        "pytorch,jpeg,256,2,0,warm,1,1,1.500000",
                        "pytorch,jpeg,256,2,0,warm,1,2,2.000000"),
                b.subList(1, b.size()));
        List<String> r = Files.readAllLines(tmp.resolve("runs.csv"));
        assertEquals(4, r.size());
        assertEquals(ResultFiles.RUNS_HEADER, r.get(0), "a header of plain names, none quoted");
        int columns = ResultFiles.RUNS_HEADER.split(",").length;
        assertEquals(columns, r.get(1).split(",", -1).length, r.get(1));
        assertTrue(
                r.get(1).startsWith("stoke,jpeg,256,2,0,warm,0,10,2,1.000000000,10.000,5.000000,505.000000,"),
                r.get(1));
        // Quoted by the CSV writer, quotes doubled; the figures a failed run lacks are empty cells.
        assertEquals(
                "pytorch,raw,32,1,128,cold,0,0,0,,,,,,,0.000000,0.000000,0.000000,,,\"exit code 3, \"\"torch\"\" missing\"",
                r.get(3));
    }

    @Test
    void csvHeadersNameTheColumns() {
        assertEquals(
                "loader,dataset,batch_size,workers,model_ms,start,repeat,batch_index,wait_ms",
                ResultFiles.BATCHES_HEADER);
        assertEquals(
                "loader,dataset,batch_size,workers,model_ms,start,repeat,images,batches,elapsed_s,images_per_s,"
                        + "time_to_first_batch_ms,process_start_to_first_batch_ms,wait_p50_ms,wait_p99_ms,peak_pss_mb,peak_rss_mb,sum_hwm_mb,cpu_s,cpu_total_s,"
                        + "error",
                ResultFiles.RUNS_HEADER);
    }

    @Test
    void csvFilesOfAnotherLayoutAreRefusedSayingWhy() throws Exception {
        ResultFiles.write(tmp, List.of(run(STOKE, 0, 10, 1.0, 5)));
        Files.writeString(tmp.resolve("runs.csv"), "loader,dataset,batch_size\nstoke,jpeg,256\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ResultFiles.read(tmp));
        assertTrue(
                e.getMessage().contains("runs.csv as this version writes it")
                        && e.getMessage().contains("\"workers\""),
                e.getMessage());
    }

    /** What a failed run may say: commas, quotes, several lines. */
    private static final String ERROR = "exit code 3, \"torch\" missing; log: /tmp/a,b.log\nTraceback:\n  'x'";

    @Test
    void csvFilesReadBackToTheSameRuns() {
        List<RunResult> runs = List.of(
                run(STOKE, 0, 10, 1.25, 5, 0.25),
                run(TORCH, 1, 10, 2.0, 7, 1.5, 2),
                run(new RunKey("stoke", "raw", 32, 4, 12.5, RunKey.COLD), 0, 10, 0.5, 3),
                RunResult.failed(new RunKey("pytorch", "raw", 32, 1, 128, RunKey.COLD), 0, ERROR));
        ResultFiles.write(tmp, runs);
        List<RunResult> back = ResultFiles.read(tmp);
        assertEquals(runs.size(), back.size());
        for (int i = 0; i < runs.size(); i++) {
            RunResult a = runs.get(i);
            RunResult b = back.get(i);
            assertEquals(a.key(), b.key());
            assertEquals(a.repeat(), b.repeat());
            assertEquals(a.ok(), b.ok());
            if (a.ok()) {
                assertArrayEquals(a.waitNs(), b.waitNs());
                assertEquals(a.images(), b.images());
                assertEquals(a.elapsedS(), b.elapsedS(), 1e-6);
                assertEquals(a.peakPssBytes(), b.peakPssBytes());
                assertEquals(a.cpuS(), b.cpuS(), 1e-3);
                assertEquals(a.processStartToFirstBatchS(), b.processStartToFirstBatchS(), 1e-9);
            }
        }
        assertEquals(ERROR, back.get(3).error());
        ReportInfo info = new ReportInfo("m", 2, 2048, List.of(), List.of(), List.of());
        assertEquals(SummaryReport.render(Aggregate.of(runs), info), SummaryReport.render(Aggregate.of(back), info));
    }

    @Test
    void procParsersReadStatusAndStatLines() {
        long[] s = ProcessTreeMonitor.status(List.of("Name:\tjava", "VmHWM:\t  2048 kB", "VmRSS:\t  1024 kB"));
        assertArrayEquals(new long[] {1024, 2048}, s);
        // The command name may hold spaces and parentheses; fields count from the last ')'.
        String stat = "4242 (pt_data (worker) 0) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 1 0 100 0 0";
        assertEquals(175, ProcessTreeMonitor.cpuTicks(stat));
    }
}
