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
                    .append(String.format(Locale.ROOT, "%.6f", w[i] / 1e6)).append('\n');
        }
        return sb.toString();
    }

    /** The {@code runs.csv} row of one run, ending in a newline. */
    public static String runRow(RunResult r) {
        String err = r.error() == null ? "" : '"' + r.error().replace('"', '\'').replace('\n', ' ') + '"';
        return String.format(Locale.ROOT, "%s,%d,%d,%.9f,%.3f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%s%n",
                keyColumns(r.key(), r.repeat()), r.images(), r.waitNs().length, r.elapsedS(), r.imagesPerSecond(),
                r.timeToFirstBatchS() * 1e3, r.waitQuantileMs(0.5), r.waitQuantileMs(0.99), r.peakPssBytes() / 1e6,
                r.peakRssBytes() / 1e6, r.sumHwmBytes() / 1e6, r.cpuS(), r.cpuTotalS(), err);
    }

    /**
     * Reads back what {@link #write} wrote, so that the summary and plots can be redrawn without
     * running the sweep again. The files hold waits to the nanosecond, memory to the byte and
     * times to the microsecond or better, so a redrawn summary is the one the sweep wrote.
     */
    public static List<RunResult> read(Path dir) {
        try {
            java.util.Map<String, java.util.List<Long>> waits = new java.util.HashMap<>();
            List<String> b = Files.readAllLines(dir.resolve("batches.csv"), StandardCharsets.UTF_8);
            checkHeader(b, BATCHES_HEADER, "batches.csv");
            for (String line : b.subList(1, b.size())) {
                String[] f = line.split(",");
                String run = String.join(",", java.util.Arrays.copyOf(f, 6));
                waits.computeIfAbsent(run, k -> new java.util.ArrayList<>())
                        .add(Math.round(Double.parseDouble(f[7]) * 1e6));
            }
            List<String> r = Files.readAllLines(dir.resolve("runs.csv"), StandardCharsets.UTF_8);
            checkHeader(r, RUNS_HEADER, "runs.csv");
            List<RunResult> out = new java.util.ArrayList<>();
            for (String line : r.subList(1, r.size())) {
                String[] f = line.split(",", 19);
                RunKey key = new RunKey(f[0], f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]), Double.parseDouble(f[4]));
                int repeat = Integer.parseInt(f[5]);
                String error = f[18].isEmpty() ? null : f[18].replaceAll("^\"|\"$", "");
                if (error != null) {
                    out.add(RunResult.failed(key, repeat, error));
                    continue;
                }
                long[] w = waits.getOrDefault(String.join(",", java.util.Arrays.copyOf(f, 6)), List.of()).stream()
                        .mapToLong(Long::longValue).toArray();
                out.add(new RunResult(key, repeat, Long.parseLong(f[6]), Double.parseDouble(f[8]), w,
                        mb(f[14]), mb(f[13]), mb(f[15]), Double.parseDouble(f[16]), Double.parseDouble(f[17]), null));
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the results in " + dir, e);
        }
    }

    private static long mb(String s) {
        return Math.round(Double.parseDouble(s) * 1e6);
    }

    private static void checkHeader(List<String> lines, String header, String name) {
        if (lines.isEmpty() || !lines.get(0).equals(header)) {
            throw new IllegalArgumentException(name + " does not start with the header this version writes: " + header);
        }
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
