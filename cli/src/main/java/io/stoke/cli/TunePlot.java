package io.stoke.cli;

import io.stoke.loader.internal.SafeFiles;
import io.stoke.tune.TuneReport;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.Stroke;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/**
 * The plot: images/s against workers, one colour per batch size; dashed lines are the predictions,
 * dots (joined by solid lines where a batch size has several) what was measured, the ring the
 * recommendation. Drawn with Java2D, as the CLI carries no chart library (the benchmarks' XChart
 * stays in their own jar).
 */
public final class TunePlot {
    static final int WIDTH = 900;
    static final int HEIGHT = 560;
    private static final Color[] COLOURS = {
        new Color(0x1f77b4),
        new Color(0xff7f0e),
        new Color(0x2ca02c),
        new Color(0xd62728),
        new Color(0x9467bd),
        new Color(0x8c564b),
        new Color(0xe377c2),
        new Color(0x7f7f7f)
    };

    private TunePlot() {}

    public static void write(TuneReport.Report r, Path file) throws IOException {
        System.setProperty("java.awt.headless", "true");
        BufferedImage image = draw(r);
        // An exclusive temporary file renamed into place: a link planted at the name is never written through.
        SafeFiles.writeStreamAtomically(file, null, out -> {
            if (!ImageIO.write(image, "png", out)) {
                throw new IOException("no PNG writer in this Java runtime");
            }
        });
    }

    static BufferedImage draw(TuneReport.Report r) {
        BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, WIDTH, HEIGHT);
            new Frame(g, r).draw();
        } finally {
            g.dispose();
        }
        return image;
    }

    /** The axes' scales and the drawing. */
    private static final class Frame {
        private final Graphics2D g;
        private final TuneReport.Report r;
        private final int left = 80;
        private final int right = WIDTH - 170;
        private final int top = 60;
        private final int bottom = HEIGHT - 60;
        private final int maxWorkers;
        private final double yMax;

        Frame(Graphics2D g, TuneReport.Report r) {
            this.g = g;
            this.r = r;
            this.maxWorkers = Math.max(2, r.settings().maxWorkers());
            double m = 1;
            for (TuneReport.PredictedOut p : r.predicted()) {
                m = Math.max(m, p.imagesPerSecond());
            }
            for (TuneReport.MeasuredOut p : r.measured()) {
                m = Math.max(m, p.imagesPerSecond());
            }
            this.yMax = niceCeiling(m * 1.08);
        }

        double x(double workers) {
            return left + (workers - 1) / (maxWorkers - 1) * (right - left);
        }

        double y(double ips) {
            return bottom - ips / yMax * (bottom - top);
        }

        void draw() {
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
            FontMetrics fm = g.getFontMetrics();
            g.setColor(Color.BLACK);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
            g.drawString(title(), left, 22);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
            g.drawString(fit("step: " + r.consumer().step(), WIDTH - left - 10, fm), left, 40);
            axes(fm);
            List<Integer> sizes = r.settings().batchSizes();
            Stroke dashed =
                    new BasicStroke(1.6f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1, new float[] {6, 5}, 0);
            Stroke solid = new BasicStroke(2.2f);
            for (int i = 0; i < sizes.size(); i++) {
                int b = sizes.get(i);
                g.setColor(COLOURS[i % COLOURS.length]);
                g.setStroke(dashed);
                g.draw(line(r.predicted().stream()
                        .filter(p -> p.batchSize() == b)
                        .map(p -> new double[] {p.workers(), p.imagesPerSecond()})
                        .toList()));
                List<double[]> measured = r.measured().stream()
                        .filter(p -> p.batchSize() == b)
                        .sorted(java.util.Comparator.comparingInt(TuneReport.MeasuredOut::workers))
                        .map(p -> new double[] {p.workers(), p.imagesPerSecond()})
                        .toList();
                g.setStroke(solid);
                if (measured.size() > 1) {
                    g.draw(line(measured));
                }
                for (double[] p : measured) {
                    g.fill(new Ellipse2D.Double(x(p[0]) - 4.5, y(p[1]) - 4.5, 9, 9));
                }
                legend(i, b, fm);
            }
            TuneReport.Recommendation rec = r.recommendation();
            g.setColor(Color.BLACK);
            g.setStroke(new BasicStroke(2f));
            g.draw(new Ellipse2D.Double(x(rec.workers()) - 10, y(rec.imagesPerSecond()) - 10, 20, 20));
            int ly = top + 22 * sizes.size() + 20;
            g.setStroke(new BasicStroke(1.6f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1, new float[] {6, 5}, 0));
            g.drawLine(right + 20, ly, right + 44, ly);
            g.drawString("predicted", right + 50, ly + 5);
            g.fill(new Ellipse2D.Double(right + 27.5, ly + 22 - 4.5, 9, 9));
            g.drawString("measured", right + 50, ly + 27);
            g.setStroke(new BasicStroke(2f));
            g.draw(new Ellipse2D.Double(right + 22, ly + 44 - 10, 20, 20));
            g.drawString("recommended", right + 50, ly + 49);
        }

        private String title() {
            return String.format(
                    Locale.ROOT,
                    "stoke tune%s: %d cores, %d images",
                    r.mode().equals("exhaustive") ? " --exhaustive" : "",
                    r.machine().cores(),
                    r.dataset().images());
        }

        /** {@code text}, cut with an ellipsis to {@code width} pixels. */
        private static String fit(String text, int width, FontMetrics fm) {
            if (fm.stringWidth(text) <= width) {
                return text;
            }
            String t = text;
            while (!t.isEmpty() && fm.stringWidth(t + "...") > width) {
                t = t.substring(0, t.length() - 1);
            }
            return t + "...";
        }

        private void legend(int i, int batchSize, FontMetrics fm) {
            int ly = top + 22 * i;
            g.setStroke(new BasicStroke(2.2f));
            g.drawLine(right + 20, ly, right + 44, ly);
            g.drawString("batch " + batchSize, right + 50, ly + fm.getAscent() / 2 - 1);
        }

        private void axes(FontMetrics fm) {
            g.setColor(new Color(0xdddddd));
            g.setStroke(new BasicStroke(1f));
            double step = niceStep(yMax / 6);
            for (double v = 0; v <= yMax + 1e-9; v += step) {
                int yy = (int) Math.round(y(v));
                g.drawLine(left, yy, right, yy);
            }
            g.setColor(Color.BLACK);
            g.drawLine(left, bottom, right, bottom);
            g.drawLine(left, top, left, bottom);
            for (double v = 0; v <= yMax + 1e-9; v += step) {
                int yy = (int) Math.round(y(v));
                String s = String.format(Locale.ROOT, "%.0f", v);
                g.drawString(s, left - 8 - fm.stringWidth(s), yy + fm.getAscent() / 2 - 1);
            }
            int every = Math.max(1, (int) Math.ceil(maxWorkers / 16.0));
            for (int w = 1; w <= maxWorkers; w += every) {
                int xx = (int) Math.round(x(w));
                g.drawLine(xx, bottom, xx, bottom + 5);
                String s = Integer.toString(w);
                g.drawString(s, xx - fm.stringWidth(s) / 2, bottom + 20);
            }
            String xl = "workers (decoding threads)";
            g.drawString(xl, (left + right) / 2 - fm.stringWidth(xl) / 2, bottom + 42);
            Graphics2D rotated = (Graphics2D) g.create();
            rotated.rotate(-Math.PI / 2);
            String yl = "images/s";
            rotated.drawString(yl, -(top + bottom) / 2 - fm.stringWidth(yl) / 2, 22);
            rotated.dispose();
        }

        private Path2D line(List<double[]> points) {
            Path2D path = new Path2D.Double();
            boolean first = true;
            for (double[] p : points) {
                if (first) {
                    path.moveTo(x(p[0]), y(p[1]));
                    first = false;
                } else {
                    path.lineTo(x(p[0]), y(p[1]));
                }
            }
            return path;
        }
    }

    /** 1, 2 or 5 times a power of ten, at least {@code v}. */
    static double niceStep(double v) {
        double p = Math.pow(10, Math.floor(Math.log10(Math.max(v, 1e-9))));
        for (double m : new double[] {1, 2, 5, 10}) {
            if (m * p >= v) {
                return m * p;
            }
        }
        return 10 * p;
    }

    private static double niceCeiling(double v) {
        double step = niceStep(v / 6);
        return Math.ceil(v / step) * step;
    }
}
