package io.stoke.bench.harness;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * The Markdown summary: the headline comparison the issue asks for, cold and warm side by side,
 * then every sweep point. Every figure is a median over repeats with [min–max] beside it; nothing
 * here is typed in by hand, it is all computed from the runs.
 */
public final class SummaryReport {
    public static final String STOKE = HarnessLoaders.STOKE;
    public static final String PYTORCH = HarnessLoaders.PYTORCH;

    private SummaryReport() {}

    /**
     * @param aggregates every sweep point
     * @param info       the machine, how the runs were made, and anything the reader must know
     */
    public static String render(List<Aggregate> aggregates, ReportInfo info) {
        StringBuilder sb = new StringBuilder();
        sb.append("# Stoke vs PyTorch DataLoader: benchmark summary\n\n");
        sb.append("Machine: ").append(info.machine()).append("\n\n");
        for (String n : info.notes()) {
            note(sb, n);
        }
        sb.append("## How these runs were made\n\n");
        for (String c : info.conditions()) {
            sb.append("- ").append(c).append('\n');
        }
        sb.append('\n');
        headline(sb, aggregates, info.warmupImages());
        pixels(sb, info.pixelDifferences());
        sb.append("## Every sweep point\n\n");
        sb.append("Median over repeats [min–max]. Start: cold, a fresh process; warm, after ")
                .append(info.warmupImages())
                .append(" images untimed in the same process. ")
                .append(
                        "First batch: from creating the loader; process start → first batch: from the harness starting ")
                .append("the run's process (JVM start, or Python's and torch's imports, included) to its first batch ")
                .append("(a warm run's first untimed one). ")
                .append("Waits leave out the first batch (that is the time to first batch). ")
                .append("Memory: peak of the summed Pss (shared pages split between processes) and of the summed RSS ")
                .append(
                        "(shared pages counted once per process) over the loader's process tree. CPU: user + system time ")
                .append("of the process tree during the timed span, per image.\n\n");
        sb.append("| loader | start | dataset | batch | workers | model ms/batch | runs | images/s | first batch ms "
                + "| process start → first batch ms | wait p50 ms | wait p99 ms | p99/p50 | peak PSS MB | peak RSS MB "
                + "| CPU ms/image |\n");
        sb.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Aggregate a : aggregates) {
            RunKey k = a.key();
            sb.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %s | %d | %d | %s | %d%s | %s | %s | %s | %s | %s | %s | %s " + "| %s | %s |%n",
                    k.loader(),
                    k.start(),
                    k.dataset(),
                    k.batchSize(),
                    k.workers(),
                    RunKey.fmtMs(k.modelMs()),
                    a.runs(),
                    a.failed() > 0 ? " (" + a.failed() + " failed)" : "",
                    a.imagesPerS().format("%.0f"),
                    a.ttfbMs().format("%.0f"),
                    a.processStartToFirstBatchMs().format("%.0f"),
                    a.p50Ms().format("%.2f"),
                    a.p99Ms().format("%.2f"),
                    a.p99OverP50().format("%.1f"),
                    a.pssMb().format("%.0f"),
                    a.rssMb().format("%.0f"),
                    a.cpuMsPerImage().format("%.2f")));
        }
        return sb.toString();
    }

    /**
     * One note, one blockquote, however many lines it has (a script's advice on what to install
     * does): each further line is prefixed with {@code >} so that it stays inside the quote.
     */
    private static void note(StringBuilder sb, String note) {
        List<String> lines = note.strip().lines().map(String::stripTrailing).toList();
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i);
            sb.append(i == 0 ? "> **Note:** " + l : l.isEmpty() ? ">" : "> " + l)
                    .append('\n');
        }
        sb.append('\n');
    }

    /**
     * What a start means, as the summary and the plots say it: {@code cold} is what a user sees
     * when a job starts, {@code warm} the steady state after the warm-up.
     */
    public static String startLabel(String start, int warmupImages) {
        return start.equals(RunKey.COLD)
                ? "cold: a fresh process, as a user starts it"
                : String.format(
                        Locale.ROOT, "warm (steady: after %d images untimed in the same process)", warmupImages);
    }

    private static String cfg(RunKey k) {
        return String.format(
                Locale.ROOT,
                "batch %d, %d worker%s, model %s ms",
                k.batchSize(),
                k.workers(),
                k.workers() == 1 ? "" : "s",
                RunKey.fmtMs(k.modelMs()));
    }

    /** The starts that have a successful run among {@code all}: cold first. */
    private static List<String> starts(List<Aggregate> all) {
        return List.of(RunKey.COLD, RunKey.WARM).stream()
                .filter(st -> all.stream().anyMatch(a -> a.key().start().equals(st) && a.runs() > 0))
                .toList();
    }

    private static void headline(StringBuilder sb, List<Aggregate> all, int warmupImages) {
        sb.append("## Headline (JPEG dataset, no simulated model time)\n\n");
        List<Aggregate> jpeg0 = all.stream()
                .filter(a -> a.key().dataset().equals("jpeg") && a.key().modelMs() == 0)
                .toList();
        List<String> starts = starts(jpeg0);
        if (starts.isEmpty()) {
            sb.append("No successful JPEG run without model time: nothing to compare.\n\n");
            return;
        }
        for (String st : starts) {
            sb.append("- **")
                    .append(startLabel(st, warmupImages))
                    .append(
                            st.equals(RunKey.COLD)
                                    ? ".** Nothing runs untimed before the clock: the figure for time to first batch.\n"
                                    : ".** Stoke's kernels are compiled, PyTorch's persistent workers are running.\n");
        }
        sb.append('\n');
        // Batch 256 (ImageNet training's usual size) when the sweep has it, else its largest.
        TreeSet<Integer> batches = new TreeSet<>();
        jpeg0.stream()
                .filter(a -> a.runs() > 0)
                .forEach(a -> batches.add(a.key().batchSize()));
        sideBySide(sb, jpeg0, starts, batches.contains(256) ? 256 : batches.last());
        List<String> loaders = loaders(jpeg0);
        List<List<Aggregate>> bests = new ArrayList<>();
        for (String st : starts) {
            bests.add(best(sb, jpeg0, st, loaders));
        }
        sb.append(
                "**Per-batch load time, p99/p50** (consumer wait per batch, first batch left out), at each best:\n\n");
        List<String> mem = new ArrayList<>();
        for (int i = 0; i < starts.size(); i++) {
            for (int j = 0; j < loaders.size(); j++) {
                Aggregate a = bests.get(i).get(j);
                if (a == null) {
                    continue;
                }
                String name = HarnessLoaders.title(loaders.get(j)) + " " + starts.get(i);
                sb.append(String.format(
                        Locale.ROOT,
                        "- %s: %s (p50 %s ms, p99 %s ms)%n",
                        name,
                        a.p99OverP50().format("%.1f"),
                        a.p50Ms().format("%.2f"),
                        a.p99Ms().format("%.2f")));
                mem.add(name + " " + a.pssMb().format("%.0f") + " MB PSS ("
                        + a.rssMb().format("%.0f") + " MB RSS)");
            }
        }
        sb.append('\n');
        sb.append("**Peak memory of all processes involved**, at each best: ")
                .append(String.join("; ", mem))
                .append(".\n\n");
    }

    /**
     * One table at one batch size over workers: images/s and time to first batch for each loader
     * and start side by side, and the time from process start to first batch for the cold runs.
     * {@code batch} has at least one successful run.
     */
    private static void sideBySide(StringBuilder sb, List<Aggregate> jpeg0, List<String> starts, int batch) {
        TreeSet<Integer> workers = new TreeSet<>();
        for (Aggregate a : jpeg0) {
            if (a.key().batchSize() == batch && a.runs() > 0) {
                workers.add(a.key().workers());
            }
        }
        sb.append(String.format(
                Locale.ROOT,
                "**Batch %d, %s** (median over repeats [min–max]; first batch: ms from "
                        + "creating the loader; process start → first batch: ms from starting the run's process, JVM start or "
                        + "Python's and torch's imports included, cold runs only):%n%n",
                batch,
                String.join(" and ", starts)));
        List<String> loaders = loaders(jpeg0);
        StringBuilder header = new StringBuilder("| workers | figure |");
        StringBuilder rule = new StringBuilder("|---:|---|");
        for (String st : starts) {
            for (String loader : loaders) {
                header.append(' ')
                        .append(HarnessLoaders.title(loader))
                        .append(' ')
                        .append(st)
                        .append(" |");
                rule.append("---:|");
            }
        }
        sb.append(header).append('\n').append(rule).append('\n');
        SideBySide table = new SideBySide(sb, jpeg0, starts, loaders, batch);
        for (int w : workers) {
            table.row(w, "images/s", a -> a.imagesPerS().format("%.0f"));
            table.row(w, "first batch ms", a -> a.ttfbMs().format("%.0f"));
            if (starts.contains(RunKey.COLD)) {
                // A warm run's process has its first batch in the untimed warm-up: not a start a user sees.
                table.row(
                        w,
                        "process start → first batch ms",
                        a -> a.key().start().equals(RunKey.COLD)
                                ? a.processStartToFirstBatchMs().format("%.0f")
                                : "–");
            }
        }
        sb.append('\n');
    }

    /** The side-by-side table's rows: one figure at one worker count, for each start and loader. */
    private record SideBySide(
            StringBuilder sb, List<Aggregate> jpeg0, List<String> starts, List<String> loaders, int batch) {
        void row(int workers, String figure, Function<Aggregate, String> cell) {
            sb.append("| ").append(workers).append(" | ").append(figure).append(" |");
            for (String st : starts) {
                for (String loader : loaders) {
                    Aggregate a = Aggregate.find(jpeg0, new RunKey(loader, "jpeg", batch, workers, 0, st));
                    sb.append(' ').append(a == null ? "n/a" : cell.apply(a)).append(" |");
                }
            }
            sb.append('\n');
        }
    }

    /** The loaders with a successful run among {@code all}, in {@link HarnessLoaders#ALL}'s order. */
    private static List<String> loaders(List<Aggregate> all) {
        return HarnessLoaders.ALL.stream()
                .filter(l -> all.stream().anyMatch(a -> a.key().loader().equals(l) && a.runs() > 0))
                .toList();
    }

    /**
     * The best settings of each loader from one start, and Stoke's ratio to each PyTorch-side
     * best, first to the fastest of them (PyTorch's fastest path here); returns each loader's best
     * in {@code loaders}' order (null where it has none).
     */
    private static List<Aggregate> best(StringBuilder sb, List<Aggregate> jpeg0, String start, List<String> loaders) {
        List<Aggregate> bests = new ArrayList<>();
        for (String l : loaders) {
            bests.add(Aggregate.best(jpeg0, a -> is(a, l, start)));
        }
        sb.append("**Best settings of each loader, ")
                .append(start)
                .append("** (the sweep point with the highest median images/s among the ")
                .append(start)
                .append(" runs):\n\n");
        for (int i = 0; i < loaders.size(); i++) {
            line(sb, HarnessLoaders.title(loaders.get(i)), bests.get(i));
        }
        Aggregate s = loaders.contains(STOKE) ? bests.get(loaders.indexOf(STOKE)) : null;
        Aggregate fastest = bests.stream()
                .filter(a -> a != null && HarnessLoaders.torchSide(a.key().loader()))
                .max(Comparator.comparingDouble(a -> a.imagesPerS().median()))
                .orElse(null);
        if (s != null && fastest != null) {
            ratio(
                    sb,
                    "**",
                    start,
                    "PyTorch's fastest path here ("
                            + HarnessLoaders.title(fastest.key().loader()) + ")",
                    s,
                    fastest);
            for (Aggregate p : bests) {
                if (p != null
                        && p != fastest
                        && HarnessLoaders.torchSide(p.key().loader())) {
                    ratio(sb, "", start, HarnessLoaders.title(p.key().loader()), s, p);
                }
            }
            // The matched comparison: Stoke with the fastest PyTorch path's best settings, so the
            // ratio is not a product of the loaders being tuned differently.
            Aggregate sm = Aggregate.find(jpeg0, fastest.key().withLoader(STOKE));
            if (sm != null) {
                sb.append(String.format(
                        Locale.ROOT,
                        "- Matched, at %s's best settings (%s): Stoke %s images/s, ratio %.2fx%n",
                        HarnessLoaders.title(fastest.key().loader()),
                        cfg(fastest.key()),
                        sm.imagesPerS().format("%.0f"),
                        sm.imagesPerS().median() / fastest.imagesPerS().median()));
            }
        }
        sb.append('\n');
        return bests;
    }

    /** One line: Stoke's best over {@code other}'s, in {@code emphasis} ({@code **} or nothing). */
    private static void ratio(
            StringBuilder sb, String emphasis, String start, String otherName, Aggregate stoke, Aggregate other) {
        sb.append(String.format(
                Locale.ROOT,
                "- %sRatio of the bests, %s: Stoke / %s = %.2fx%s%n",
                emphasis,
                start,
                otherName,
                stoke.imagesPerS().median() / other.imagesPerS().median(),
                emphasis));
    }

    /** Each loader's first batch against torchvision's PIL path's: speed beside exactness. */
    private static void pixels(StringBuilder sb, List<PixelDifference> differences) {
        if (differences.isEmpty()) {
            return;
        }
        sb.append("## Pixels: each loader's first batch against torchvision's PIL path\n\n");
        sb.append("The evaluation transform's first batch (Resize 256 + CenterCrop 224, uint8, dataset order), "
                + "whatever the sweep's transform: a faster loader that gives other pixels is read as such. "
                + "Differences of a channel value, 0-255.\n\n");
        sb.append("| loader | images | mean absolute difference | largest |\n|---|---:|---:|---:|\n");
        for (PixelDifference d : differences) {
            sb.append(
                    d.ok()
                            ? String.format(
                                    Locale.ROOT,
                                    "| %s | %d | %.3f | %d |%n",
                                    HarnessLoaders.title(d.loader()),
                                    d.images(),
                                    d.meanAbs(),
                                    d.maxAbs())
                            : "| " + HarnessLoaders.title(d.loader()) + " | not compared: " + d.error() + " | | |\n");
        }
        sb.append('\n');
    }

    private static void line(StringBuilder sb, String name, Aggregate a) {
        if (a == null) {
            sb.append("- ").append(name).append(": no successful run\n");
            return;
        }
        sb.append(String.format(
                Locale.ROOT,
                "- %s: **%s images/s** (%s; %d repeat%s)%n",
                name,
                a.imagesPerS().format("%.0f"),
                cfg(a.key()),
                a.runs(),
                a.runs() == 1 ? "" : "s"));
    }

    private static boolean is(Aggregate a, String loader, String start) {
        return a.key().loader().equals(loader) && a.key().start().equals(start);
    }
}
