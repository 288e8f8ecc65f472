package io.stoke.cli.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** The harness's PNG plots, drawn with XChart from the runs and their aggregates. */
public final class Plots {
    private Plots() {
    }

    /**
     * Draws every plot into {@code dir}; returns the files written. Plots with no data (a loader or
     * dataset left out of the sweep) are not drawn.
     */
    public static List<Path> draw(Path dir, List<RunResult> runs, List<Aggregate> aggs, int cores) {
        System.setProperty("java.awt.headless", "true");
        List<Path> out = new ArrayList<>();
        TreeSet<Integer> batches = values(aggs, a -> a.key().batchSize());
        TreeSet<Integer> workers = values(aggs, a -> a.key().workers());
        // The per-batch plot at the worker count closest to the core count: PyTorch's spikes
        // (one worker's whole batch) show there, and so does Stoke's lack of them.
        int w = workers.isEmpty() ? 1 : workers.stream().min(java.util.Comparator.comparingInt(x -> Math.abs(x - cores))).get();
        for (int b : batches) {
            XYChart c = chart(String.format(Locale.ROOT, "Per-batch load time (consumer wait), JPEG, batch %d, %d workers, "
                    + "no model time, repeat 1", b, w), "batch index", "wait per batch (ms)");
            c.getStyler().setYAxisLogarithmic(true);
            boolean any = false;
            for (String loader : List.of(SummaryReport.STOKE, SummaryReport.PYTORCH)) {
                RunKey k = new RunKey(loader, "jpeg", b, w, 0);
                RunResult r = runs.stream().filter(x -> x.key().equals(k) && x.repeat() == 0 && x.ok()).findFirst().orElse(null);
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
                XYSeries s = c.addSeries(name(loader), x, y);
                s.setMarker(SeriesMarkers.CIRCLE);
                any = true;
            }
            if (any) {
                out.add(save(c, dir, String.format(Locale.ROOT, "per-batch-wait-b%d-w%d", b, w)));
            }
        }
        for (String dataset : List.of("jpeg", "raw")) {
            for (double model : values(aggs, a -> a.key().modelMs() == 0 ? 0.0 : 1.0)) {
                boolean bottleneck = model != 0;
                List<Aggregate> sel = aggs.stream().filter(a -> a.key().dataset().equals(dataset)
                        && (a.key().modelMs() != 0) == bottleneck).toList();
                XYChart c = chart(String.format(Locale.ROOT, "Images/s vs workers, %s dataset, %s (median of repeats)",
                                dataset.equals("jpeg") ? "JPEG" : "preprocessed raw uint8",
                                bottleneck ? "model the bottleneck" : "no model time"),
                        "workers", "images/s");
                if (series(c, sel, a -> a.key().workers(), a -> a.imagesPerS().median(),
                        a -> name(a.key().loader()) + ", batch " + a.key().batchSize())) {
                    out.add(save(c, dir, "images-per-s-vs-workers-" + dataset + (bottleneck ? "-model" : "-nomodel")));
                }
            }
        }
        List<Aggregate> jpeg0 = aggs.stream().filter(a -> a.key().dataset().equals("jpeg") && a.key().modelMs() == 0).toList();
        XYChart t = chart("Time to first batch vs batch size, JPEG, no model time (median of repeats)", "batch size",
                "time to first batch (ms)");
        t.getStyler().setXAxisLogarithmic(true);
        if (series(t, jpeg0, a -> a.key().batchSize(), a -> a.ttfbMs().median(),
                a -> name(a.key().loader()) + ", " + a.key().workers() + " workers")) {
            out.add(save(t, dir, "time-to-first-batch-vs-batch-size"));
        }
        XYChart m = chart("Peak memory (summed PSS of all processes) vs workers, JPEG, no model time", "workers",
                "peak PSS (MB)");
        if (series(m, jpeg0, a -> a.key().workers(), a -> a.pssMb().median(),
                a -> name(a.key().loader()) + ", batch " + a.key().batchSize())) {
            out.add(save(m, dir, "memory-vs-workers"));
        }
        return out;
    }

    private static String name(String loader) {
        return loader.equals(SummaryReport.STOKE) ? "Stoke" : "PyTorch";
    }

    private static <T extends Comparable<T>> TreeSet<T> values(List<Aggregate> aggs, Function<Aggregate, T> f) {
        TreeSet<T> s = new TreeSet<>();
        aggs.stream().filter(a -> a.runs() > 0).map(f).forEach(s::add);
        return s;
    }

    /** One series per distinct {@code name}, points sorted by x; false when nothing was drawn. */
    private static boolean series(XYChart c, List<Aggregate> sel, ToDoubleFunction<Aggregate> x,
                                  ToDoubleFunction<Aggregate> y, Function<Aggregate, String> name) {
        java.util.Map<String, List<Aggregate>> groups = new java.util.TreeMap<>();
        for (Aggregate a : sel) {
            if (a.runs() > 0 && Double.isFinite(y.applyAsDouble(a))) {
                groups.computeIfAbsent(name.apply(a), k -> new ArrayList<>()).add(a);
            }
        }
        for (var e : groups.entrySet()) {
            List<Aggregate> pts = e.getValue().stream().sorted(java.util.Comparator.comparingDouble(x)).toList();
            double[] xs = pts.stream().mapToDouble(x).toArray();
            double[] ys = pts.stream().mapToDouble(y).toArray();
            XYSeries s = c.addSeries(e.getKey(), xs, ys);
            s.setMarker(e.getKey().startsWith("Stoke") ? SeriesMarkers.CIRCLE : SeriesMarkers.DIAMOND);
        }
        return !groups.isEmpty();
    }

    private static XYChart chart(String title, String xTitle, String yTitle) {
        XYChart c = new XYChartBuilder().width(1000).height(600).title(title).xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        c.getStyler().setMarkerSize(7);
        c.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
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
