package io.stoke.tune;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * What {@code DIR/tune.json} holds (snake_case keys, as {@code bench --json}), and the table tune
 * prints. Every rate is images/s, every time seconds unless its name says ms.
 */
public final class TuneReport {
    private static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build();

    private TuneReport() {}

    /** The whole file. */
    public record Report(
            String command,
            String mode,
            Machine machine,
            Dataset dataset,
            Consumer consumer,
            SettingsOut settings,
            Recommendation recommendation,
            List<DecodeOut> decode,
            List<StepOut> steps,
            List<PredictedOut> predicted,
            List<MeasuredOut> measured,
            Seconds seconds) {}

    public record Machine(int cores, String cpu, String os, String java) {}

    public record Dataset(String path, int images, String transform) {}

    public record Consumer(String step, String model, Double stepMs, Double stepMsPerImage, Integer intraOpThreads) {}

    public record SettingsOut(
            List<Integer> batchSizes,
            int maxWorkers,
            double secondsPerPoint,
            double warmupSeconds,
            double probeSeconds,
            int probeBatchSize,
            int candidates,
            boolean exhaustive) {}

    public record Recommendation(
            int batchSize, int workers, double imagesPerSecond, double predictedImagesPerSecond, String why) {}

    public record DecodeOut(
            int batchSize,
            int workers,
            double imagesPerSecond,
            double wallMsPerImagePerWorker,
            double cpuMsPerImage,
            double workerCpuMsPerImage,
            double otherCores) {}

    public record StepOut(int batchSize, double stepMs, double modelCores, boolean measured) {}

    public record PredictedOut(int batchSize, int workers, double imagesPerSecond, String bound) {}

    public record MeasuredOut(
            int batchSize,
            int workers,
            double imagesPerSecond,
            double predictedImagesPerSecond,
            double stallFraction,
            double waitMsPerBatch,
            double stepMsPerBatch,
            long batches,
            long images,
            double seconds,
            double producerCpuSeconds,
            double processCpuSeconds,
            double otherCores) {}

    /**
     * @param total     the whole command, from its start to the files (JVM start not included)
     * @param probes    the decode probes and the step's costs
     * @param measuring the points run for real
     */
    public record Seconds(double total, double probes, double measuring) {}

    /** The report of {@code r}; the caller's parts describe the run. */
    public static Report of(
            Tuner.Result r, Tuner.Settings s, String command, Dataset dataset, Consumer consumer, double totalSeconds) {
        Tuner.Point best = r.recommended();
        return new Report(
                command,
                s.exhaustive() ? "exhaustive" : "tune",
                machine(s.cores()),
                dataset,
                consumer,
                new SettingsOut(
                        s.batchSizes(),
                        s.maxWorkers(),
                        s.secondsPerPoint(),
                        s.warmupSeconds(),
                        s.probeSeconds(),
                        s.probeBatchSize(),
                        s.candidates(),
                        s.exhaustive()),
                new Recommendation(
                        best.measured().batchSize(),
                        best.measured().workers(),
                        best.measured().imagesPerSecond(),
                        best.predicted().imagesPerSecond(),
                        r.why()),
                r.decode().stream()
                        .map(d -> new DecodeOut(
                                d.batchSize(),
                                d.workers(),
                                d.imagesPerSecond(),
                                d.wallSecondsPerImagePerWorker() * 1e3,
                                d.cpuSecondsPerImage() < 0 ? -1 : d.cpuSecondsPerImage() * 1e3,
                                d.workerCpuSecondsPerImage() < 0 ? -1 : d.workerCpuSecondsPerImage() * 1e3,
                                d.otherCores()))
                        .toList(),
                r.steps().stream()
                        .map(c -> new StepOut(c.batchSize(), c.seconds() * 1e3, c.modelCores(), c.measured()))
                        .toList(),
                r.predicted().stream()
                        .map(p -> new PredictedOut(
                                p.batchSize(),
                                p.workers(),
                                p.imagesPerSecond(),
                                p.bound().name()))
                        .toList(),
                r.measured().stream()
                        .map(p -> {
                            Trial.Measurement m = p.measured();
                            return new MeasuredOut(
                                    m.batchSize(),
                                    m.workers(),
                                    m.imagesPerSecond(),
                                    p.predicted().imagesPerSecond(),
                                    m.stallFraction(),
                                    m.waitMsPerBatch(),
                                    m.stepMsPerBatch(),
                                    m.batches(),
                                    m.images(),
                                    m.seconds(),
                                    m.producerCpuSeconds(),
                                    m.processCpuSeconds(),
                                    m.otherCores());
                        })
                        .toList(),
                new Seconds(totalSeconds, r.probeSeconds(), r.measuringSeconds()));
    }

    static Machine machine(int cores) {
        String cpu = "unknown";
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
                    .filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).trim())
                    .findFirst()
                    .orElse(cpu);
        } catch (IOException | RuntimeException e) {
            // Not Linux, or /proc unreadable: the CPU's name is only a label.
        }
        return new Machine(
                cores,
                cpu,
                System.getProperty("os.name") + " " + System.getProperty("os.arch"),
                System.getProperty("java.version"));
    }

    public static void write(Report report, Path file) throws IOException {
        // An exclusive temporary file renamed into place: a link planted at the name is never written through.
        io.stoke.loader.internal.SafeFiles.writeStreamAtomically(file, null, out -> JSON.writeValue(out, report));
    }

    public static Report read(Path file) throws IOException {
        return JSON.readValue(file.toFile(), Report.class);
    }

    /** The table: every point's prediction, and what was measured where it ran. */
    public static void print(Report r, PrintStream out) {
        out.printf(Locale.ROOT, "%n%s%n", r.command());
        out.printf(
                Locale.ROOT,
                "  %d cores; step: %s; %s%n",
                r.machine().cores(),
                r.consumer().step(),
                r.mode().equals("exhaustive") ? "every point measured" : "the best predictions measured");
        for (DecodeOut d : r.decode()) {
            out.printf(
                    Locale.ROOT,
                    "  decoding alone, %d worker%s: %.0f images/s (%.2f ms per image per worker)%n",
                    d.workers(),
                    d.workers() == 1 ? "" : "s",
                    d.imagesPerSecond(),
                    d.wallMsPerImagePerWorker());
        }
        out.printf(
                Locale.ROOT,
                "  %6s %8s %9s %12s %10s %7s %10s%n",
                "batch",
                "workers",
                "step ms",
                "predicted/s",
                "measured/s",
                "waited",
                "bound");
        for (PredictedOut p : r.predicted()) {
            Optional<MeasuredOut> m = r.measured().stream()
                    .filter(x -> x.batchSize() == p.batchSize() && x.workers() == p.workers())
                    .findFirst();
            double stepMs = r.steps().stream()
                    .filter(s -> s.batchSize() == p.batchSize())
                    .mapToDouble(StepOut::stepMs)
                    .findFirst()
                    .orElse(Double.NaN);
            boolean chosen = p.batchSize() == r.recommendation().batchSize()
                    && p.workers() == r.recommendation().workers();
            out.printf(
                    Locale.ROOT,
                    "  %6d %8d %9.1f %12.0f %10s %7s %10s%s%n",
                    p.batchSize(),
                    p.workers(),
                    stepMs,
                    p.imagesPerSecond(),
                    m.map(x -> String.format(Locale.ROOT, "%.0f", x.imagesPerSecond()))
                            .orElse("-"),
                    m.map(x -> String.format(Locale.ROOT, "%.0f%%", 100 * x.stallFraction()))
                            .orElse(""),
                    p.bound(),
                    chosen ? "  <- recommended" : "");
        }
        out.printf(
                Locale.ROOT,
                "recommended: --batch-size %d --workers %d (%.0f images/s)%n  %s%n",
                r.recommendation().batchSize(),
                r.recommendation().workers(),
                r.recommendation().imagesPerSecond(),
                r.recommendation().why());
        long disturbed = r.measured().stream()
                        .filter(m -> m.otherCores() > Tuner.DISTURBED_CORES)
                        .count()
                + r.decode().stream()
                        .filter(d -> d.otherCores() > Tuner.DISTURBED_CORES)
                        .count();
        if (disturbed > 0) {
            out.printf(
                    Locale.ROOT,
                    "WARNING: other processes kept more than %.2f cores busy during %d of the runs above (other_cores"
                            + " in tune.json): run tune again on a quiet machine%n",
                    Tuner.DISTURBED_CORES,
                    disturbed);
        }
        out.printf(
                Locale.ROOT,
                "took %.1f s: %.1f s probing, %.1f s measuring %d point%s%n",
                r.seconds().total(),
                r.seconds().probes(),
                r.seconds().measuring(),
                r.measured().size(),
                r.measured().size() == 1 ? "" : "s");
    }
}
