package io.stoke.bench.harness;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SequenceWriter;
import com.fasterxml.jackson.dataformat.csv.CsvGenerator;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvParser;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The harness's CSV files, read and written with Jackson's CSV module (quoting, commas and line
 * breaks inside a cell are its business): one row per batch of every run, and one row per run.
 * Each file starts with a header row naming its columns.
 *
 * <p>Waits are written in milliseconds with six decimals and memory in MB with six decimals, i.e.
 * to the nanosecond and the byte, so what is read back is what was measured; other times are
 * rounded to the nanosecond or microsecond. A figure that does not exist (a failed run's time, the
 * p99 of a one-batch run) is an empty cell.
 */
public final class ResultFiles {
    private static final CsvMapper CSV = CsvMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(JsonGenerator.Feature.WRITE_BIGDECIMAL_AS_PLAIN)
            // Quotes only the cells that need them: by default any cell over 24 characters is quoted.
            .enable(CsvGenerator.Feature.STRICT_CHECK_FOR_QUOTING)
            .enable(CsvParser.Feature.EMPTY_STRING_AS_NULL)
            .build();
    private static final CsvSchema BATCHES =
            CSV.schemaFor(BatchRow.class).withHeader().withStrictHeaders(true);
    private static final CsvSchema RUNS =
            CSV.schemaFor(RunRow.class).withHeader().withStrictHeaders(true);

    /** Header of {@code batches.csv}. */
    public static final String BATCHES_HEADER = header(BATCHES);
    /** Header of {@code runs.csv}. */
    public static final String RUNS_HEADER = header(RUNS);

    private ResultFiles() {}

    /** One row of {@code batches.csv}: one batch of one run. */
    @JsonPropertyOrder({
        "loader",
        "dataset",
        "batch_size",
        "workers",
        "model_ms",
        "start",
        "repeat",
        "batch_index",
        "wait_ms"
    })
    record BatchRow(
            String loader,
            String dataset,
            int batchSize,
            int workers,
            BigDecimal modelMs,
            String start,
            int repeat,
            int batchIndex,
            BigDecimal waitMs) {

        RunKey key() {
            return new RunKey(loader, dataset, batchSize, workers, modelMs.doubleValue(), start);
        }
    }

    /** One row of {@code runs.csv}: one run. */
    @JsonPropertyOrder({
        "loader",
        "dataset",
        "batch_size",
        "workers",
        "model_ms",
        "start",
        "repeat",
        "images",
        "batches",
        "elapsed_s",
        "images_per_s",
        "time_to_first_batch_ms",
        "process_start_to_first_batch_ms",
        "wait_p50_ms",
        "wait_p99_ms",
        "peak_pss_mb",
        "peak_rss_mb",
        "sum_hwm_mb",
        "cpu_s",
        "cpu_total_s",
        "error"
    })
    record RunRow(
            String loader,
            String dataset,
            int batchSize,
            int workers,
            BigDecimal modelMs,
            String start,
            int repeat,
            long images,
            int batches,
            BigDecimal elapsedS,
            BigDecimal imagesPerS,
            BigDecimal timeToFirstBatchMs,
            BigDecimal processStartToFirstBatchMs,
            BigDecimal waitP50Ms,
            BigDecimal waitP99Ms,
            BigDecimal peakPssMb,
            BigDecimal peakRssMb,
            BigDecimal sumHwmMb,
            BigDecimal cpuS,
            BigDecimal cpuTotalS,
            String error) {

        static RunRow of(RunResult r) {
            RunKey k = r.key();
            long[] w = r.waitNs();
            return new RunRow(
                    k.loader(),
                    k.dataset(),
                    k.batchSize(),
                    k.workers(),
                    modelMsCell(k.modelMs()),
                    k.start(),
                    r.repeat(),
                    r.images(),
                    w.length,
                    rounded(r.elapsedS(), 9),
                    rounded(r.imagesPerSecond(), 3),
                    w.length == 0 ? null : nsAsMs(w[0]),
                    rounded(r.processStartToFirstBatchS() * 1e3, 6),
                    rounded(r.waitQuantileMs(0.5), 6),
                    rounded(r.waitQuantileMs(0.99), 6),
                    bytesAsMb(r.peakPssBytes()),
                    bytesAsMb(r.peakRssBytes()),
                    bytesAsMb(r.sumHwmBytes()),
                    rounded(r.cpuS(), 6),
                    rounded(r.cpuTotalS(), 6),
                    r.error());
        }

        RunKey key() {
            return new RunKey(loader, dataset, batchSize, workers, modelMs.doubleValue(), start);
        }

        /** The run, with its waits from {@code batches.csv}; the other columns are computed from these. */
        RunResult toResult(long[] waitNs) {
            if (error != null) {
                return RunResult.failed(key(), repeat, error);
            }
            double startToFirst = toDouble(processStartToFirstBatchMs) / 1e3;
            return new RunResult(
                    key(),
                    repeat,
                    images,
                    toDouble(elapsedS),
                    waitNs,
                    startToFirst,
                    mbAsBytes(peakRssMb),
                    mbAsBytes(peakPssMb),
                    mbAsBytes(sumHwmMb),
                    toDouble(cpuS),
                    toDouble(cpuTotalS),
                    null);
        }
    }

    /** Which run a batch belongs to. */
    private record RunId(RunKey key, int repeat) {}

    /** Writes both files from scratch. */
    public static void write(Path dir, List<RunResult> results) {
        try (Writer b = Files.newBufferedWriter(dir.resolve("batches.csv"), StandardCharsets.UTF_8);
                Writer r = Files.newBufferedWriter(dir.resolve("runs.csv"), StandardCharsets.UTF_8);
                SequenceWriter batches = CSV.writer(BATCHES).writeValues(b);
                SequenceWriter runs = CSV.writer(RUNS).writeValues(r)) {
            for (RunResult res : results) {
                RunKey k = res.key();
                long[] w = res.waitNs();
                for (int i = 0; i < w.length; i++) {
                    batches.write(new BatchRow(
                            k.loader(),
                            k.dataset(),
                            k.batchSize(),
                            k.workers(),
                            modelMsCell(k.modelMs()),
                            k.start(),
                            res.repeat(),
                            i,
                            nsAsMs(w[i])));
                }
                runs.write(RunRow.of(res));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write results to " + dir, e);
        }
    }

    /**
     * Reads back what {@link #write} wrote, so that the summary and plots can be redrawn without
     * running the sweep again.
     */
    public static List<RunResult> read(Path dir) {
        Map<RunId, List<Long>> waits = new HashMap<>();
        for (BatchRow b : rows(dir.resolve("batches.csv"), BatchRow.class, BATCHES)) {
            waits.computeIfAbsent(new RunId(b.key(), b.repeat()), x -> new ArrayList<>())
                    .add(msAsNs(b.waitMs()));
        }
        List<RunResult> out = new ArrayList<>();
        for (RunRow r : rows(dir.resolve("runs.csv"), RunRow.class, RUNS)) {
            long[] w = waits.getOrDefault(new RunId(r.key(), r.repeat()), List.of()).stream()
                    .mapToLong(Long::longValue)
                    .toArray();
            out.add(r.toResult(w));
        }
        return out;
    }

    private static <T> List<T> rows(Path file, Class<T> type, CsvSchema schema) {
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8);
                MappingIterator<T> it = CSV.readerFor(type).with(schema).readValues(in)) {
            return it.readAll();
        } catch (JsonProcessingException e) {
            // A header other than this version's, or a cell that is not what its column holds.
            throw new IllegalArgumentException(
                    "cannot read " + file + " as this version writes it (columns " + header(schema) + "): "
                            + e.getOriginalMessage(),
                    e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    private static String header(CsvSchema schema) {
        List<String> names = new ArrayList<>();
        schema.forEach(c -> names.add(c.getName()));
        return String.join(",", names);
    }

    /** 4.0 as 4, 12.5 as 12.5: the key's model time, as typed. */
    private static BigDecimal modelMsCell(double ms) {
        return BigDecimal.valueOf(ms).stripTrailingZeros();
    }

    /** Exact: a millisecond figure with six decimals holds the nanoseconds. */
    private static BigDecimal nsAsMs(long ns) {
        return BigDecimal.valueOf(ns, 6);
    }

    private static long msAsNs(BigDecimal ms) {
        return ms.movePointRight(6).setScale(0, RoundingMode.HALF_EVEN).longValueExact();
    }

    /** Exact: MB with six decimals holds the bytes. */
    private static BigDecimal bytesAsMb(long bytes) {
        return BigDecimal.valueOf(bytes, 6);
    }

    private static long mbAsBytes(BigDecimal mb) {
        return mb == null
                ? 0
                : mb.movePointRight(6).setScale(0, RoundingMode.HALF_EVEN).longValueExact();
    }

    /** {@code x} to {@code decimals} places, or null (an empty cell) when it is not a number. */
    private static BigDecimal rounded(double x, int decimals) {
        return Double.isFinite(x) ? BigDecimal.valueOf(x).setScale(decimals, RoundingMode.HALF_EVEN) : null;
    }

    private static double toDouble(BigDecimal x) {
        return x == null ? Double.NaN : x.doubleValue();
    }
}
