package io.stoke.bench.harness;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;

/**
 * One sweep point's figures over its successful repeats: median, min and max of each.
 *
 * @param key        the settings
 * @param runs       successful repeats
 * @param failed     failed repeats
 * @param imagesPerS images per second, end to end
 * @param ttfbMs     time to first batch
 * @param processStartToFirstBatchMs from starting the run's process to its first batch
 * @param p50Ms      median per-batch wait (first batch left out)
 * @param p99Ms      99th percentile per-batch wait (first batch left out)
 * @param p99OverP50 the ratio, per run, then over repeats
 * @param pssMb      peak summed Pss of the process tree
 * @param rssMb      peak summed RSS of the process tree
 * @param cpuMsPerImage CPU time of the process tree in the timed span, per image
 */
public record Aggregate(
        RunKey key,
        int runs,
        int failed,
        Stats.Spread imagesPerS,
        Stats.Spread ttfbMs,
        Stats.Spread processStartToFirstBatchMs,
        Stats.Spread p50Ms,
        Stats.Spread p99Ms,
        Stats.Spread p99OverP50,
        Stats.Spread pssMb,
        Stats.Spread rssMb,
        Stats.Spread cpuMsPerImage) {

    /** Groups runs by settings (in first-seen order) and aggregates each group. */
    public static List<Aggregate> of(List<RunResult> results) {
        Map<RunKey, List<RunResult>> groups = new LinkedHashMap<>();
        for (RunResult r : results) {
            groups.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r);
        }
        List<Aggregate> out = new ArrayList<>();
        for (var e : groups.entrySet()) {
            List<RunResult> ok = e.getValue().stream().filter(RunResult::ok).toList();
            int failed = e.getValue().size() - ok.size();
            out.add(new Aggregate(
                    e.getKey(),
                    ok.size(),
                    failed,
                    spread(ok, RunResult::imagesPerSecond),
                    spread(ok, r -> r.timeToFirstBatchS() * 1e3),
                    spread(ok, r -> r.processStartToFirstBatchS() * 1e3),
                    spread(ok, r -> r.waitQuantileMs(0.5)),
                    spread(ok, r -> r.waitQuantileMs(0.99)),
                    spread(ok, r -> r.waitQuantileMs(0.99) / r.waitQuantileMs(0.5)),
                    spread(ok, r -> r.peakPssBytes() / 1e6),
                    spread(ok, r -> r.peakRssBytes() / 1e6),
                    spread(ok, r -> r.images() > 0 ? r.cpuS() * 1e3 / r.images() : Double.NaN)));
        }
        return out;
    }

    private static Stats.Spread spread(List<RunResult> runs, ToDoubleFunction<RunResult> f) {
        return Stats.Spread.of(runs.stream().mapToDouble(f).toArray());
    }

    /** The point with the highest median images/s among those matching {@code filter}, or null. */
    public static Aggregate best(List<Aggregate> all, Predicate<Aggregate> filter) {
        return all.stream()
                .filter(filter)
                .filter(a -> a.runs() > 0 && Double.isFinite(a.imagesPerS().median()))
                .max(Comparator.comparingDouble(a -> a.imagesPerS().median()))
                .orElse(null);
    }

    /** The aggregate with exactly these settings, or null. */
    public static Aggregate find(List<Aggregate> all, RunKey key) {
        return all.stream()
                .filter(a -> a.key().equals(key) && a.runs() > 0)
                .findFirst()
                .orElse(null);
    }
}
