package io.stoke.bench.harness;

import java.util.Arrays;
import java.util.Locale;

/** Quantiles and medians as the summary reports them. */
public final class Stats {
    private Stats() {}

    /**
     * The q-quantile of {@code values} with linear interpolation between closest ranks (numpy's
     * default, so figures can be checked with {@code numpy.quantile}); NaN when empty.
     */
    public static double quantile(double[] values, double q) {
        if (q < 0 || q > 1) {
            throw new IllegalArgumentException("q must be in [0, 1]: " + q);
        }
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] v = values.clone();
        Arrays.sort(v);
        double pos = q * (v.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = Math.min(lo + 1, v.length - 1);
        return v[lo] + (pos - lo) * (v[hi] - v[lo]);
    }

    /** The median (mean of the two middle values for an even count); NaN when empty. */
    public static double median(double[] values) {
        return quantile(values, 0.5);
    }

    /** The smallest value; NaN when empty. */
    public static double min(double[] values) {
        return values.length == 0 ? Double.NaN : Arrays.stream(values).min().getAsDouble();
    }

    /** The largest value; NaN when empty. */
    public static double max(double[] values) {
        return values.length == 0 ? Double.NaN : Arrays.stream(values).max().getAsDouble();
    }

    /** Median, min and max of one figure over repeats. */
    public record Spread(double median, double min, double max) {
        /** The spread of the finite values among {@code values} (NaN, NaN, NaN when there are none). */
        public static Spread of(double[] values) {
            double[] finite = Arrays.stream(values).filter(Double::isFinite).toArray();
            return new Spread(Stats.median(finite), Stats.min(finite), Stats.max(finite));
        }

        /** {@code median [min-max]} with {@code fmt} for each, or {@code median} alone when min == max. */
        public String format(String fmt) {
            if (!Double.isFinite(median)) {
                return "n/a";
            }
            String m = String.format(Locale.ROOT, fmt, median);
            if (min == max) {
                return m;
            }
            return m + " [" + String.format(Locale.ROOT, fmt, min) + "–" + String.format(Locale.ROOT, fmt, max) + "]";
        }
    }
}
