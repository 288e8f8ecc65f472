package io.stoke.bench.harness;

import com.fasterxml.jackson.databind.JsonNode;
import io.stoke.testdata.DemoSample;
import io.stoke.testdata.SyntheticImageNet;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code stoke harness-autotune}: auto workers against every fixed count, side by side in one run,
 * each run a fresh process ({@link AutotuneRunCommand}), configurations in a shuffled order per
 * repeat. Scenarios: a loader-bound loop (no model), a model-bound one (a sleep per batch that one
 * worker keeps up with), a CPU-bound model on the same cores (arithmetic on the consumer's thread,
 * timed per step, against the same steps with no loader at all), and the seeds' grid (batch size x
 * workers x simulated model time per image). Writes OUT/runs.jsonl, OUT/summary.md and
 * OUT/plots/*.png.
 */
@Command(
        name = "autotune",
        mixinStandardHelpOptions = true,
        description = "Auto workers against fixed counts, side by side; see docs/benchmarks/README.md.")
public final class AutotuneCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--out", required = true, paramLabel = "DIR")
    Path out;

    @Option(names = "--images", description = "Generated ImageNet-like JPEGs (default: ${DEFAULT-VALUE}).")
    int images = 2000;

    @Option(names = "--repeats", description = "Repeats of every configuration (default: ${DEFAULT-VALUE}).")
    int repeats = 3;

    @Option(names = "--warmup-images", description = "Untimed images before a warm run (default: ${DEFAULT-VALUE}).")
    int warmupImages = 500;

    @Option(names = "--no-grid", description = "Leave out the seeds' grid.")
    boolean noGrid;

    @Option(names = "--max-fixed", description = "Fixed counts 1 to this (default: cores + 1).")
    Integer maxFixed;

    /** One configuration. */
    record Config(String scenario, String start, int batchSize, String workers, double modelMs, long spin, int steps) {
        String label() {
            return String.format(
                    Locale.ROOT, "%s-%s-b%d-w%s-m%.0f-s%d", scenario, start, batchSize, workers, modelMs, spin);
        }
    }

    private final List<JsonNode> runs = new ArrayList<>();
    private final Map<String, List<JsonNode>> byLabel = new LinkedHashMap<>();

    @Override
    public Integer call() throws Exception {
        Files.createDirectories(out.resolve("runs"));
        Files.createDirectories(out.resolve("plots"));
        int cores = Runtime.getRuntime().availableProcessors();
        int most = maxFixed != null ? maxFixed : cores + 1;
        Path data = out.resolve("data/jpeg-" + images);
        SyntheticImageNet.ensure(
                data,
                new SyntheticImageNet.Options(images, Math.min(DemoSample.CLASSES, images), DemoSample.SEED, null));
        long started = System.nanoTime();
        // Calibration: one worker's rate (warm), and the spin that takes the model step's time.
        JsonNode one = run(data, new Config("calibrate", "warm", 64, "1", 0, 0, 0), -1);
        double rate1 = one.get("images_per_s").asDouble();
        double stepMs = 1000.0 * 64 / (0.8 * rate1); // a demand of 80% of one worker
        JsonNode spin0 = run(data, new Config("calibrate", "none", 64, "none", 0, 20_000_000L, 20), -1);
        long spin =
                Math.round(20_000_000L * stepMs / spin0.get("step_ms_median").asDouble());
        say(String.format(Locale.ROOT, "one worker: %.0f images/s; model step %.1f ms; spin %d", rate1, stepMs, spin));

        List<Config> configs = new ArrayList<>();
        List<String> counts = new ArrayList<>();
        for (int w = 1; w <= most; w++) {
            counts.add(Integer.toString(w));
        }
        counts.add("auto");
        for (String start : List.of("cold", "warm")) {
            for (String w : counts) {
                configs.add(new Config("loader-bound", start, 64, w, 0, 0, 0));
                configs.add(new Config("model-bound", start, 64, w, stepMs, 0, 0));
            }
        }
        configs.add(new Config("cpu-model", "warm", 64, "none", 0, spin, 60));
        for (String w : List.of("1", Integer.toString(cores), "auto")) {
            configs.add(new Config("cpu-model", "warm", 64, w, 0, spin, 0));
        }
        if (!noGrid) {
            for (int b : List.of(32, 128, 256)) {
                for (double msPerImage : List.of(0.0, 4.0)) {
                    for (String w : counts) {
                        configs.add(new Config("grid", "warm", b, w, b * msPerImage, 0, 0));
                    }
                }
            }
        }
        Random order = new Random(42);
        for (int r = 0; r < repeats; r++) {
            List<Config> shuffled = new ArrayList<>(configs);
            Collections.shuffle(shuffled, order);
            for (Config c : shuffled) {
                JsonNode f = run(data, c, r);
                byLabel.computeIfAbsent(c.label(), k -> new ArrayList<>()).add(f);
            }
        }
        double minutes = (System.nanoTime() - started) / 60e9;
        Files.writeString(
                out.resolve("summary.md"),
                AutotuneReport.summary(
                        configs,
                        byLabel,
                        cores,
                        images,
                        warmupImages,
                        repeats,
                        rate1,
                        stepMs,
                        minutes,
                        String.join(
                                " ",
                                spec.commandLine().getParseResult().originalArgs().stream()
                                        .filter(a -> !a.equals("autotune"))
                                        .toList())));
        AutotuneReport.plots(out.resolve("plots"), configs, byLabel, counts);
        say("wrote " + out.resolve("summary.md"));
        return 0;
    }

    private JsonNode run(Path data, Config c, int repeat) throws IOException, InterruptedException {
        Path json = out.resolve("runs").resolve(c.label() + "-r" + (repeat + 1) + ".json");
        Files.deleteIfExists(json);
        List<String> cmd = new ArrayList<>(HarnessCommand.stokeJava());
        cmd.addAll(List.of("autotune-run", data.toString(), "--batch-size", Integer.toString(c.batchSize())));
        cmd.addAll(List.of("--workers", c.workers().equals("none") ? "1" : c.workers()));
        cmd.addAll(List.of("--model-ms", Double.toString(c.modelMs()), "--spin-iterations", Long.toString(c.spin())));
        cmd.addAll(List.of("--json", json.toString()));
        if (c.steps() > 0) {
            cmd.addAll(List.of("--steps-only", Integer.toString(c.steps())));
        }
        if (c.start().equals("warm")) {
            cmd.addAll(List.of("--warmup-images", Integer.toString(warmupImages)));
        }
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        if (!p.waitFor(20, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IllegalStateException("run " + c.label() + " failed: " + String.join(" ", cmd));
        }
        JsonNode f = HarnessJson.MAPPER.readTree(json.toFile());
        ((com.fasterxml.jackson.databind.node.ObjectNode) f)
                .put("label", c.label())
                .put("repeat", repeat + 1)
                .put("scenario", c.scenario())
                .put("start", c.start());
        runs.add(f);
        Files.writeString(
                out.resolve("runs.jsonl"),
                HarnessJson.MAPPER.writeValueAsString(withoutSteps(f)) + "\n",
                java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.APPEND);
        say(String.format(
                Locale.ROOT,
                "%s r%d: %.0f images/s, producer %.2f CPU-s, step %.1f ms, %d active at the end",
                c.label(),
                repeat + 1,
                f.get("images_per_s").asDouble(),
                f.get("producer_cpu_s").asDouble(),
                f.get("step_ms_median").asDouble(),
                f.get("active_workers_at_end").asInt()));
        return f;
    }

    private static JsonNode withoutSteps(JsonNode f) {
        com.fasterxml.jackson.databind.node.ObjectNode copy = f.deepCopy();
        copy.remove("step_ms");
        return copy;
    }

    private static void say(String s) {
        System.err.println("autotune: " + s);
    }

    static void png(XYChart chart, Path file) {
        try {
            BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static XYChart chart(String title, String x, String y) {
        XYChart c = new XYChartBuilder()
                .width(900)
                .height(560)
                .title(title)
                .xAxisTitle(x)
                .yAxisTitle(y)
                .build();
        c.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
        return c;
    }

    static XYSeries marker(XYChart c, String name, double x, double y) {
        XYSeries s = c.addSeries(name, new double[] {x}, new double[] {y});
        s.setMarker(SeriesMarkers.DIAMOND);
        s.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
        return s;
    }
}
