package io.stoke.bench.harness;

import java.awt.Color;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.ToDoubleFunction;
import java.util.function.ToIntFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The harness's PNG plots, drawn with XChart from the runs and their aggregates. The time to first
 * batch is drawn for both starts, cold and warm; the others for the steady state (warm runs, or
 * cold ones in a sweep without warm runs), as their titles say.
 */
public final class Plots {
    private Plots() {}

    /**
     * Draws every plot into {@code dir}; returns the files written. Plots with no data (a loader or
     * dataset left out of the sweep) are not drawn.
     */
    public static List<Path> draw(Path dir, List<RunResult> runs, List<Aggregate> aggs, ReportInfo info) {
        System.setProperty("java.awt.headless", "true");
        List<Path> out = new ArrayList<>();
        int cores = info.cores();
        TreeSet<String> present = values(aggs, a -> a.key().start());
        List<String> starts = List.of(RunKey.COLD, RunKey.WARM).stream()
                .filter(present::contains)
                .toList();
        String steady = starts.contains(RunKey.WARM) ? RunKey.WARM : RunKey.COLD;
        String steadyRuns = steady.equals(RunKey.WARM)
                ? String.format(Locale.ROOT, "warm runs (after %d images untimed)", info.warmupImages())
                : "cold runs (fresh processes)";
        List<Aggregate> steadyAggs =
                aggs.stream().filter(a -> a.key().start().equals(steady)).toList();
        TreeSet<Integer> batches = values(aggs, a -> a.key().batchSize());
        TreeSet<Integer> workers = values(aggs, a -> a.key().workers());
        // The per-batch plot at the worker count closest to the core count: PyTorch's spikes
        // (one worker's whole batch) show there, and so does Stoke's lack of them.
        int w = workers.isEmpty()
                ? 1
                : workers.stream()
                        .min(Comparator.comparingInt(x -> Math.abs(x - cores)))
                        .get();
        for (int b : batches) {
            XYChart c = chart(
                    String.format(
                            Locale.ROOT,
                            "Per-batch wait, JPEG, batch %d, %d workers, no model time, " + "first repeat, %s",
                            b,
                            w,
                            steadyRuns),
                    "batch index",
                    "wait per batch (ms)");
            c.getStyler().setYAxisLogarithmic(true);
            boolean any = false;
            for (String loader : HarnessLoaders.ALL) {
                RunKey k = new RunKey(loader, "jpeg", b, w, 0, steady);
                RunResult r = runs.stream()
                        .filter(x -> x.key().equals(k) && x.repeat() == 0 && x.ok())
                        .findFirst()
                        .orElse(null);
                if (r == null || r.waitNs().length == 0) {
                    continue;
                }
                double[] x = new double[r.waitNs().length];
                double[] y = new double[x.length];
                for (int i = 0; i < x.length; i++) {
                    x[i] = i;
                    // Floor at 1 us: the log axis cannot show a zero wait.
                    y[i] = Math.max(r.waitNs()[i] / 1e6, 0.001);
                }
                style(
                        c.addSeries(name(loader), x, y),
                        loader,
                        steady,
                        false,
                        PALETTE[HarnessLoaders.ALL.indexOf(loader) % PALETTE.length]);
                any = true;
            }
            if (any) {
                out.add(save(c, dir, String.format(Locale.ROOT, "per-batch-wait-b%d-w%d", b, w)));
            }
        }
        for (String dataset : List.of("jpeg", "raw")) {
            for (double model : values(aggs, a -> a.key().modelMs() == 0 ? 0.0 : 1.0)) {
                boolean bottleneck = model != 0;
                List<Aggregate> sel = steadyAggs.stream()
                        .filter(a ->
                                a.key().dataset().equals(dataset) && (a.key().modelMs() != 0) == bottleneck)
                        .toList();
                XYChart c = chart(
                        String.format(
                                Locale.ROOT,
                                "Images/s vs workers, %s, %s, %s, medians",
                                dataset.equals("jpeg") ? "JPEG" : "preprocessed raw uint8",
                                bottleneck ? "model the bottleneck" : "no model time",
                                steadyRuns),
                        "workers",
                        "images/s");
                c.getStyler().setYAxisMin(0.0);
                if (series(
                        c,
                        sel,
                        List.of(steady),
                        a -> a.key().workers(),
                        a -> a.imagesPerS().median(),
                        a -> a.key().batchSize(),
                        g -> "batch " + g)) {
                    if (bottleneck) {
                        modelLine(c, sel);
                    }
                    out.add(save(c, dir, "images-per-s-vs-workers-" + dataset + (bottleneck ? "-model" : "-nomodel")));
                }
            }
        }
        List<Aggregate> jpeg0 = aggs.stream()
                .filter(a -> a.key().dataset().equals("jpeg") && a.key().modelMs() == 0)
                .toList();
        XYChart t = chart(
                "Time to first batch vs batch size, JPEG, no model time, " + String.join(" and ", starts)
                        + " runs (median of repeats)",
                "batch size",
                "time to first batch from creating the loader (ms)");
        t.getStyler().setYAxisMin(0.0);
        if (series(
                t,
                jpeg0,
                starts,
                a -> a.key().batchSize(),
                a -> a.ttfbMs().median(),
                a -> a.key().workers(),
                g -> g + (g == 1 ? " worker" : " workers"))) {
            out.add(save(t, dir, "time-to-first-batch-vs-batch-size"));
        }
        XYChart m = chart(
                "Peak PSS of all processes vs workers, JPEG, no model time, " + steadyRuns,
                "workers",
                "peak summed PSS (MB)");
        m.getStyler().setYAxisMin(0.0);
        List<Aggregate> steadyJpeg0 =
                jpeg0.stream().filter(a -> a.key().start().equals(steady)).toList();
        if (series(
                m,
                steadyJpeg0,
                List.of(steady),
                a -> a.key().workers(),
                a -> a.pssMb().median(),
                a -> a.key().batchSize(),
                g -> "batch " + g)) {
            out.add(save(m, dir, "memory-vs-workers"));
        }
        return out;
    }

    private static String name(String loader) {
        return HarnessLoaders.title(loader);
    }

    private static <T extends Comparable<T>> TreeSet<T> values(List<Aggregate> aggs, Function<Aggregate, T> f) {
        TreeSet<T> s = new TreeSet<>();
        aggs.stream().filter(a -> a.runs() > 0).map(f).forEach(s::add);
        return s;
    }

    /**
     * One line per loader, start (of {@code starts}) and group value ({@code group}: batch size or
     * workers), over the sweep's x values placed evenly (1, 2, 4, 8 or 32 ... 1024 would bunch up on
     * a linear axis) and labelled with their values. A group has the same colour in every line; see
     * {@link #style} for the rest. Returns false when nothing was drawn.
     */
    private static boolean series(
            XYChart c,
            List<Aggregate> sel,
            List<String> starts,
            ToIntFunction<Aggregate> x,
            ToDoubleFunction<Aggregate> y,
            ToIntFunction<Aggregate> group,
            IntFunction<String> groupLabel) {
        List<Aggregate> ok = sel.stream()
                .filter(a -> a.runs() > 0 && Double.isFinite(y.applyAsDouble(a)))
                .toList();
        List<Integer> xs = ok.stream().map(x::applyAsInt).distinct().sorted().toList();
        List<Integer> groups =
                ok.stream().map(group::applyAsInt).distinct().sorted().toList();
        boolean any = false;
        boolean both = starts.size() > 1;
        for (String start : starts) {
            for (String loader : HarnessLoaders.ALL) {
                for (int g : groups) {
                    List<Aggregate> pts = ok.stream()
                            .filter(a -> a.key().loader().equals(loader)
                                    && a.key().start().equals(start)
                                    && group.applyAsInt(a) == g)
                            .sorted(Comparator.comparingInt(x))
                            .toList();
                    if (pts.isEmpty()) {
                        continue;
                    }
                    double[] px = pts.stream()
                            .mapToDouble(a -> xs.indexOf(x.applyAsInt(a)))
                            .toArray();
                    double[] py = pts.stream().mapToDouble(y).toArray();
                    String label = name(loader) + (both ? " " + start : "") + ", " + groupLabel.apply(g);
                    style(c.addSeries(label, px, py), loader, start, both, PALETTE[groups.indexOf(g) % PALETTE.length]);
                    any = true;
                }
            }
        }
        c.setCustomXAxisTickLabelsFormatter(v -> {
            long i = Math.round(v);
            return Math.abs(v - i) < 1e-9 && i >= 0 && i < xs.size() ? Integer.toString(xs.get((int) i)) : "";
        });
        return any;
    }

    /**
     * Stoke's points are circles; PyTorch's PIL path's diamonds, its tensor path's squares,
     * torchdata.nodes' triangles. Stoke's lines are solid, the others' dashed; in a plot of both
     * starts those are the warm runs', and the cold runs' are dotted (Stoke) and dash-dotted (the
     * others).
     */
    private static void style(XYSeries s, String loader, String start, boolean bothStarts, Color colour) {
        boolean stoke = loader.equals(SummaryReport.STOKE);
        boolean cold = bothStarts && start.equals(RunKey.COLD);
        s.setMarker(
                switch (loader) {
                    case HarnessLoaders.STOKE -> SeriesMarkers.CIRCLE;
                    case HarnessLoaders.PYTORCH_TENSOR -> SeriesMarkers.SQUARE;
                    case HarnessLoaders.TORCHDATA_NODES -> SeriesMarkers.TRIANGLE_UP;
                    default -> SeriesMarkers.DIAMOND;
                });
        s.setLineStyle(
                stoke
                        ? (cold ? SeriesLines.DOT_DOT : SeriesLines.SOLID)
                        : (cold ? SeriesLines.DASH_DOT : SeriesLines.DASH_DASH));
        s.setLineColor(colour);
        s.setMarkerColor(colour);
    }

    /** The model's own rate (batch / model time), the ceiling no loader can pass, as a grey line. */
    private static void modelLine(XYChart c, List<Aggregate> sel) {
        double[] rates = sel.stream()
                .filter(a -> a.key().modelMs() > 0)
                .mapToDouble(a -> a.key().batchSize() * 1000.0 / a.key().modelMs())
                .distinct()
                .toArray();
        long xs = sel.stream().map(a -> a.key().workers()).distinct().count();
        if (rates.length != 1 || xs < 1) {
            return; // several model rates in one plot: no single ceiling to draw
        }
        XYSeries s = c.addSeries(
                String.format(Locale.ROOT, "model alone: %.0f images/s", rates[0]),
                new double[] {0, xs - 1},
                new double[] {rates[0], rates[0]});
        s.setMarker(SeriesMarkers.NONE);
        s.setLineStyle(SeriesLines.DOT_DOT);
        s.setLineColor(Color.GRAY);
    }

    private static final Color[] PALETTE = {
        new Color(0x1f77b4),
        new Color(0xd62728),
        new Color(0x2ca02c),
        new Color(0x9467bd),
        new Color(0xff7f0e),
        new Color(0x8c564b)
    };

    private static XYChart chart(String title, String xTitle, String yTitle) {
        XYChart c = new XYChartBuilder()
                .width(1200)
                .height(600)
                .title(title)
                .xAxisTitle(xTitle)
                .yAxisTitle(yTitle)
                .build();
        c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        c.getStyler().setMarkerSize(7);
        c.getStyler().setChartBackgroundColor(Color.WHITE);
        return c;
    }

    private static Path save(XYChart c, Path dir, String name) {
        Path file = dir.resolve(name + ".png");
        try {
            BitmapEncoder.saveBitmap(c, file.toString(), BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        return file;
    }
}
