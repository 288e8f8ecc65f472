package io.stoke.cli.harness;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;

/**
 * The Markdown summary: the headline comparison the issue asks for, then every sweep point.
 * Every figure is a median over repeats with [min–max] beside it; nothing here is typed in by
 * hand, it is all computed from the runs.
 */
public final class SummaryReport {
    public static final String STOKE = "stoke";
    public static final String PYTORCH = "pytorch";

    private SummaryReport() {
    }

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
        headline(sb, aggregates);
        sb.append("## Every sweep point\n\n");
        sb.append("Median over repeats [min–max]. First batch: from creating the loader; process start → first batch: ")
                .append("from the harness starting the run's process (JVM start, or Python's and torch's imports, included). ")
                .append("Waits leave out the first batch (that is the time to first batch). ")
                .append("Memory: peak of the summed Pss (shared pages split between processes) and of the summed RSS ")
                .append("(shared pages counted once per process) over the loader's process tree. CPU: user + system time ")
                .append("of the process tree during the timed span, per image.\n\n");
        sb.append("| loader | dataset | batch | workers | model ms/batch | runs | images/s | first batch ms "
                + "| process start → first batch ms | wait p50 ms | wait p99 ms | p99/p50 | peak PSS MB | peak RSS MB "
                + "| CPU ms/image |\n");
        sb.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Aggregate a : aggregates) {
            RunKey k = a.key();
            sb.append(String.format(Locale.ROOT, "| %s | %s | %d | %d | %s | %d%s | %s | %s | %s | %s | %s | %s | %s | %s "
                            + "| %s |%n",
                    k.loader(), k.dataset(), k.batchSize(), k.workers(), RunKey.fmtMs(k.modelMs()), a.runs(),
                    a.failed() > 0 ? " (" + a.failed() + " failed)" : "",
                    a.imagesPerS().format("%.0f"), a.ttfbMs().format("%.0f"),
                    a.processStartToFirstBatchMs().format("%.0f"), a.p50Ms().format("%.2f"),
                    a.p99Ms().format("%.2f"), a.p99OverP50().format("%.1f"), a.pssMb().format("%.0f"),
                    a.rssMb().format("%.0f"), a.cpuMsPerImage().format("%.2f")));
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
            sb.append(i == 0 ? "> **Note:** " + l : l.isEmpty() ? ">" : "> " + l).append('\n');
        }
        sb.append('\n');
    }

    private static String cfg(RunKey k) {
        return String.format(Locale.ROOT, "batch %d, %d worker%s, model %s ms", k.batchSize(), k.workers(),
                k.workers() == 1 ? "" : "s", RunKey.fmtMs(k.modelMs()));
    }

    private static void headline(StringBuilder sb, List<Aggregate> all) {
        sb.append("## Headline (JPEG dataset, no simulated model time)\n\n");
        Aggregate s = Aggregate.best(all, a -> is(a, STOKE, "jpeg") && a.key().modelMs() == 0);
        Aggregate p = Aggregate.best(all, a -> is(a, PYTORCH, "jpeg") && a.key().modelMs() == 0);
        if (s == null && p == null) {
            sb.append("No successful JPEG run without model time: nothing to compare.\n\n");
            return;
        }
        sb.append("**Best settings of each loader** (the sweep point with the highest median images/s):\n\n");
        line(sb, "Stoke", s);
        line(sb, "PyTorch", p);
        if (s != null && p != null) {
            sb.append(String.format(Locale.ROOT, "- **Ratio of the bests: Stoke / PyTorch = %.2fx**%n",
                    s.imagesPerS().median() / p.imagesPerS().median()));
            // The matched comparison: Stoke with PyTorch's best settings, so the ratio is not a
            // product of the two loaders being tuned differently.
            Aggregate sm = Aggregate.find(all, p.key().withLoader(STOKE));
            if (sm != null) {
                sb.append(String.format(Locale.ROOT, "- Matched, at PyTorch's best settings (%s): Stoke %s images/s, "
                                + "ratio %.2fx%n", cfg(p.key()), sm.imagesPerS().format("%.0f"),
                        sm.imagesPerS().median() / p.imagesPerS().median()));
            }
        }
        sb.append('\n');
        sb.append("**Per-batch load time, p99/p50** (consumer wait per batch, first batch left out), at each best:\n\n");
        if (s != null) {
            sb.append(String.format(Locale.ROOT, "- Stoke: %s (p50 %s ms, p99 %s ms)%n", s.p99OverP50().format("%.1f"),
                    s.p50Ms().format("%.2f"), s.p99Ms().format("%.2f")));
        }
        if (p != null) {
            sb.append(String.format(Locale.ROOT, "- PyTorch: %s (p50 %s ms, p99 %s ms)%n", p.p99OverP50().format("%.1f"),
                    p.p50Ms().format("%.2f"), p.p99Ms().format("%.2f")));
        }
        sb.append('\n');
        sb.append("**Peak memory of all processes involved**, at each best: ");
        List<String> mem = new ArrayList<>();
        if (s != null) {
            mem.add("Stoke " + s.pssMb().format("%.0f") + " MB PSS (" + s.rssMb().format("%.0f") + " MB RSS)");
        }
        if (p != null) {
            mem.add("PyTorch " + p.pssMb().format("%.0f") + " MB PSS (" + p.rssMb().format("%.0f") + " MB RSS)");
        }
        sb.append(String.join("; ", mem)).append(".\n\n");
        ttfb(sb, all, 256);
    }

    private static void ttfb(StringBuilder sb, List<Aggregate> all, int batch) {
        TreeSet<Integer> workers = new TreeSet<>();
        for (Aggregate a : all) {
            if (a.key().dataset().equals("jpeg") && a.key().modelMs() == 0 && a.key().batchSize() == batch && a.runs() > 0) {
                workers.add(a.key().workers());
            }
        }
        sb.append(String.format(Locale.ROOT, "**Time to first batch at batch %d** (ms, from creating the loader):%n%n", batch));
        if (workers.isEmpty()) {
            sb.append("No JPEG run at batch ").append(batch).append(" in this sweep.\n\n");
            return;
        }
        sb.append("| workers | Stoke | PyTorch |\n|---:|---:|---:|\n");
        for (int w : workers) {
            Aggregate s = Aggregate.find(all, new RunKey(STOKE, "jpeg", batch, w, 0));
            Aggregate p = Aggregate.find(all, new RunKey(PYTORCH, "jpeg", batch, w, 0));
            sb.append(String.format(Locale.ROOT, "| %d | %s | %s |%n", w, s == null ? "n/a" : s.ttfbMs().format("%.0f"),
                    p == null ? "n/a" : p.ttfbMs().format("%.0f")));
        }
        sb.append('\n');
    }

    private static void line(StringBuilder sb, String name, Aggregate a) {
        if (a == null) {
            sb.append("- ").append(name).append(": no successful run\n");
            return;
        }
        sb.append(String.format(Locale.ROOT, "- %s: **%s images/s** (%s; %d repeat%s)%n", name,
                a.imagesPerS().format("%.0f"), cfg(a.key()), a.runs(), a.runs() == 1 ? "" : "s"));
    }

    private static boolean is(Aggregate a, String loader, String dataset) {
        return a.key().loader().equals(loader) && a.key().dataset().equals(dataset);
    }
}
