package io.stoke.cli.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** The harness's CSV files: one row per batch of every run, and one row per run. */
public final class ResultFiles {
    /** Header of {@code batches.csv}. */
    public static final String BATCHES_HEADER = "loader,dataset,batch_size,workers,model_ms,repeat,batch_index,wait_ms";
    /** Header of {@code runs.csv}. */
    public static final String RUNS_HEADER = "loader,dataset,batch_size,workers,model_ms,repeat,images,batches,elapsed_s,"
            + "images_per_s,time_to_first_batch_ms,wait_p50_ms,wait_p99_ms,peak_pss_mb,peak_rss_mb,sum_hwm_mb,"
            + "cpu_s,cpu_total_s,error";

    private ResultFiles() {
    }

    private static String keyColumns(RunKey k, int repeat) {
        return String.format(Locale.ROOT, "%s,%s,%d,%d,%s,%d", k.loader(), k.dataset(), k.batchSize(), k.workers(),
                RunKey.fmtMs(k.modelMs()), repeat);
    }

    /** The {@code batches.csv} rows of one run, each ending in a newline. */
    public static String batchRows(RunResult r) {
        StringBuilder sb = new StringBuilder();
        String prefix = keyColumns(r.key(), r.repeat());
        long[] w = r.waitNs();
        for (int i = 0; i < w.length; i++) {
            sb.append(prefix).append(',').append(i).append(',')
                    .append(String.format(Locale.ROOT, "%.4f", w[i] / 1e6)).append('\n');
        }
        return sb.toString();
    }

    /** The {@code runs.csv} row of one run, ending in a newline. */
    public static String runRow(RunResult r) {
        String err = r.error() == null ? "" : '"' + r.error().replace('"', '\'').replace('\n', ' ') + '"';
        return String.format(Locale.ROOT, "%s,%d,%d,%.6f,%.3f,%.3f,%.4f,%.4f,%.1f,%.1f,%.1f,%.3f,%.3f,%s%n",
                keyColumns(r.key(), r.repeat()), r.images(), r.waitNs().length, r.elapsedS(), r.imagesPerSecond(),
                r.timeToFirstBatchS() * 1e3, r.waitQuantileMs(0.5), r.waitQuantileMs(0.99), r.peakPssBytes() / 1e6,
                r.peakRssBytes() / 1e6, r.sumHwmBytes() / 1e6, r.cpuS(), r.cpuTotalS(), err);
    }

    /** Writes both files from scratch. */
    public static void write(Path dir, List<RunResult> results) {
        try (Writer b = Files.newBufferedWriter(dir.resolve("batches.csv"), StandardCharsets.UTF_8);
             Writer r = Files.newBufferedWriter(dir.resolve("runs.csv"), StandardCharsets.UTF_8)) {
            b.write(BATCHES_HEADER + "\n");
            r.write(RUNS_HEADER + "\n");
            for (RunResult res : results) {
                b.write(batchRows(res));
                r.write(runRow(res));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write results to " + dir, e);
        }
    }
}
