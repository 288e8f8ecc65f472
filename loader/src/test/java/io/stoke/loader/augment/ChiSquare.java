package io.stoke.loader.augment;

import java.util.Map;
import java.util.TreeMap;

/**
 * Pearson's chi-square test that two samples of categories come from one distribution (a 2 x K
 * contingency table), categories expected fewer than 5 times pooled into one; the p-value from
 * the regularised upper incomplete gamma function (Numerical Recipes' series and continued fraction).
 */
public final class ChiSquare {
    private ChiSquare() {}

    public record Result(double statistic, int degrees, double p) {}

    public static Result twoSample(Map<String, Integer> a, Map<String, Integer> b) {
        Map<String, long[]> table = new TreeMap<>();
        a.forEach((k, v) -> table.computeIfAbsent(k, x -> new long[2])[0] += v);
        b.forEach((k, v) -> table.computeIfAbsent(k, x -> new long[2])[1] += v);
        double na = a.values().stream().mapToLong(Integer::longValue).sum();
        double nb = b.values().stream().mapToLong(Integer::longValue).sum();
        double n = na + nb;
        long[] pooled = new long[2];
        double statistic = 0;
        int categories = 0;
        for (long[] c : table.values()) {
            double total = c[0] + c[1];
            if (Math.min(total * na / n, total * nb / n) < 5) {
                pooled[0] += c[0];
                pooled[1] += c[1];
                continue;
            }
            statistic += term(c, total, na, nb, n);
            categories++;
        }
        if (pooled[0] + pooled[1] > 0) {
            statistic += term(pooled, pooled[0] + pooled[1], na, nb, n);
            categories++;
        }
        int degrees = Math.max(1, categories - 1);
        return new Result(statistic, degrees, upperGamma(degrees / 2.0, statistic / 2.0));
    }

    private static double term(long[] c, double total, double na, double nb, double n) {
        double ea = total * na / n;
        double eb = total * nb / n;
        return (c[0] - ea) * (c[0] - ea) / ea + (c[1] - eb) * (c[1] - eb) / eb;
    }

    /** Q(s, x) = Gamma(s, x) / Gamma(s). */
    static double upperGamma(double s, double x) {
        if (x <= 0) {
            return 1.0;
        }
        double lnFront = -x + s * Math.log(x) - logGamma(s);
        if (x < s + 1) {
            double sum = 1.0 / s;
            double term = sum;
            for (int k = 1; k < 10000; k++) {
                term *= x / (s + k);
                sum += term;
                if (Math.abs(term) < Math.abs(sum) * 1e-15) {
                    break;
                }
            }
            return 1.0 - sum * Math.exp(lnFront);
        }
        double tiny = 1e-300;
        double b = x + 1 - s;
        double c = 1 / tiny;
        double d = 1 / b;
        double h = d;
        for (int i = 1; i < 10000; i++) {
            double an = -i * (i - s);
            b += 2;
            d = an * d + b;
            d = Math.abs(d) < tiny ? tiny : d;
            c = b + an / c;
            c = Math.abs(c) < tiny ? tiny : c;
            d = 1 / d;
            double delta = d * c;
            h *= delta;
            if (Math.abs(delta - 1) < 1e-15) {
                break;
            }
        }
        return Math.exp(lnFront) * h;
    }

    /** Lanczos' approximation. */
    static double logGamma(double x) {
        double[] g = {
            676.5203681218851,
            -1259.1392167224028,
            771.32342877765313,
            -176.61502916214059,
            12.507343278686905,
            -0.13857109526572012,
            9.9843695780195716e-6,
            1.5056327351493116e-7
        };
        if (x < 0.5) {
            return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
        }
        x -= 1;
        double a = 0.99999999999980993;
        double t = x + 7.5;
        for (int i = 0; i < g.length; i++) {
            a += g[i] / (x + i + 1);
        }
        return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
    }
}
