package io.stoke.bench.harness;

import com.fasterxml.jackson.databind.JsonNode;
import io.stoke.bench.harness.AutotuneCommand.Config;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.XYChart;

/** The auto-workers benchmark's summary (medians over repeats) and plots. */
final class AutotuneReport {
    private AutotuneReport() {}

    static double median(List<JsonNode> runs, ToDoubleFunction<JsonNode> f) {
        return Stats.median(runs.stream().mapToDouble(f).toArray());
    }

    private static double rate(List<JsonNode> r) {
        return median(r, j -> j.get("images_per_s").asDouble());
    }

    private static double cpu(List<JsonNode> r) {
        return median(r, j -> j.get("producer_cpu_s").asDouble());
    }

    private static String ends(List<JsonNode> r) {
        return String.join(
                ",",
                r.stream().map(j -> j.get("active_workers_at_end").asText()).toList());
    }

    private static String changes(List<JsonNode> r) {
        return String.join(
                ",",
                r.stream().map(j -> Integer.toString(j.get("changes").size())).toList());
    }

    static String summary(
            List<Config> configs,
            Map<String, List<JsonNode>> runs,
            int cores,
            int images,
            int warmup,
            int repeats,
            double rate1,
            double stepMs,
            double minutes,
            String args) {
        StringBuilder s = new StringBuilder();
        s.append("# Auto workers against fixed counts\n\n");
        s.append(String.format(
                Locale.ROOT,
                "`./stoke harness-autotune %s` on %d cores: %d ImageNet-like JPEGs, eval transform (Resize 256 +"
                        + " CenterCrop 224), every run a fresh process, configurations shuffled in each of %d repeats,"
                        + " medians shown; warm runs take %d images untimed first. One worker gave %.0f images/s, so"
                        + " the model-bound step is %.1f ms per batch of 64 (a demand of 80%% of one worker). Producer"
                        + " CPU is the process's CPU time less the consumer thread's (JIT, GC and the tuner included)."
                        + " The whole run took %.0f minutes.\n\n",
                args,
                cores,
                images,
                repeats,
                warmup,
                rate1,
                stepMs,
                minutes));
        for (String scenario : List.of("loader-bound", "model-bound")) {
            for (String start : List.of("cold", "warm")) {
                List<Config> cs = configs.stream()
                        .filter(c -> c.scenario().equals(scenario) && c.start().equals(start))
                        .toList();
                if (cs.isEmpty()) {
                    continue;
                }
                s.append("## ").append(scenario).append(", ").append(start).append("\n\n");
                s.append("| workers | images/s | producer CPU-s | active at the end | changes |\n");
                s.append("| --- | ---: | ---: | --- | --- |\n");
                double best = 0;
                for (Config c : cs) {
                    if (!c.workers().equals("auto")) {
                        best = Math.max(best, rate(runs.get(c.label())));
                    }
                }
                Config fewest = null;
                for (Config c : cs) {
                    List<JsonNode> r = runs.get(c.label());
                    s.append(String.format(
                            Locale.ROOT,
                            "| %s | %.0f | %.2f | %s | %s |\n",
                            c.workers(),
                            rate(r),
                            cpu(r),
                            ends(r),
                            changes(r)));
                    if (fewest == null && !c.workers().equals("auto") && rate(r) >= 0.97 * best) {
                        fewest = c;
                    }
                }
                Config auto = cs.stream()
                        .filter(c -> c.workers().equals("auto"))
                        .findFirst()
                        .orElseThrow();
                double autoRate = rate(runs.get(auto.label()));
                double autoCpu = cpu(runs.get(auto.label()));
                double fewestCpu = cpu(runs.get(fewest.label()));
                s.append(String.format(
                        Locale.ROOT,
                        "\nauto: **%.2fx** the best fixed count's images/s (goal >= 0.95), **%.2fx** the CPU-seconds of"
                                + " %s worker%s, the fewest within 3%% of the best (goal <= 1.10).\n\n",
                        autoRate / best,
                        autoCpu / fewestCpu,
                        fewest.workers(),
                        fewest.workers().equals("1") ? "" : "s"));
            }
        }
        List<Config> cpuModel =
                configs.stream().filter(c -> c.scenario().equals("cpu-model")).toList();
        if (!cpuModel.isEmpty()) {
            s.append("## A CPU-bound model on the same cores\n\n");
            s.append("The consumer's thread does a fixed amount of arithmetic per batch; its wall time per step"
                    + " against the same steps with no loader at all (warm).\n\n");
            s.append("| workers | step ms, median | step ms, mean | vs no loading (median) | images/s |"
                    + " active at the end |\n");
            s.append("| --- | ---: | ---: | ---: | ---: | --- |\n");
            double alone = median(
                    runs.get(cpuModel.get(0).label()),
                    j -> j.get("step_ms_median").asDouble());
            for (Config c : cpuModel) {
                List<JsonNode> r = runs.get(c.label());
                double med = median(r, j -> j.get("step_ms_median").asDouble());
                double mean = median(r, j -> j.get("step_ms_mean").asDouble());
                s.append(String.format(
                        Locale.ROOT,
                        "| %s | %.1f | %.1f | %.3f | %s | %s |\n",
                        c.workers().equals("none") ? "no loader" : c.workers(),
                        med,
                        mean,
                        med / alone,
                        c.workers().equals("none") ? "" : String.format(Locale.ROOT, "%.0f", rate(r)),
                        c.workers().equals("none") ? "" : ends(r)));
            }
            s.append("\n");
        }
        List<Config> grid =
                configs.stream().filter(c -> c.scenario().equals("grid")).toList();
        if (!grid.isEmpty()) {
            s.append("## The seeds' grid (warm)\n\n");
            s.append("Batch size x workers x simulated model time per image; `plots/grid-*.png` draws it, auto"
                    + " as a diamond at the workers it ended with.\n\n");
            s.append(
                    "| batch | model ms/image | workers | images/s | producer CPU-s | wait p99 ms | active at the end |\n");
            s.append("| ---: | ---: | --- | ---: | ---: | ---: | --- |\n");
            for (Config c : grid) {
                List<JsonNode> r = runs.get(c.label());
                s.append(String.format(
                        Locale.ROOT,
                        "| %d | %.0f | %s | %.0f | %.2f | %.1f | %s |\n",
                        c.batchSize(),
                        c.modelMs() / c.batchSize(),
                        c.workers(),
                        rate(r),
                        cpu(r),
                        median(r, j -> j.path("wait_p99_ms").asDouble(Double.NaN)),
                        ends(r)));
            }
        }
        return s.toString();
    }

    static void plots(Path dir, List<Config> configs, Map<String, List<JsonNode>> runs, List<String> counts) {
        for (double msPerImage : List.of(0.0, 4.0)) {
            XYChart c = AutotuneCommand.chart(
                    String.format(
                            Locale.ROOT,
                            "images/s against workers, model %.0f ms per image (warm); diamonds: auto",
                            msPerImage),
                    "workers",
                    "images/s");
            boolean any = false;
            for (int b : List.of(32, 128, 256)) {
                List<Double> xs = new ArrayList<>();
                List<Double> ys = new ArrayList<>();
                double[] auto = null;
                for (String w : counts) {
                    Config k = new Config("grid", "warm", b, w, b * msPerImage, 0, 0);
                    List<JsonNode> r = runs.get(k.label());
                    if (r == null) {
                        continue;
                    }
                    if (w.equals("auto")) {
                        auto = new double[] {
                            median(r, j -> j.get("active_workers_at_end").asDouble()), rate(r)
                        };
                    } else {
                        xs.add(Double.parseDouble(w));
                        ys.add(rate(r));
                    }
                }
                if (xs.isEmpty()) {
                    continue;
                }
                any = true;
                c.addSeries(
                        "batch " + b,
                        xs.stream().mapToDouble(Double::doubleValue).toArray(),
                        ys.stream().mapToDouble(Double::doubleValue).toArray());
                if (auto != null) {
                    AutotuneCommand.marker(c, "batch " + b + ", auto", auto[0], auto[1]);
                }
            }
            if (any) {
                AutotuneCommand.png(c, dir.resolve(String.format(Locale.ROOT, "grid-model-%.0fms.png", msPerImage)));
            }
        }
    }
}
