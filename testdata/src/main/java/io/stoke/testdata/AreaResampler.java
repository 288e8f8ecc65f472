package io.stoke.testdata;

import java.util.Arrays;

/**
 * Resamples a rectangle of an RGB byte image into float planes: an exact area average when
 * shrinking (no aliasing however large the factor), bilinear when enlarging. Separable, vertical
 * pass first, one row buffer.
 */
final class AreaResampler {
    private AreaResampler() {}

    /** Taps of one axis: for output {@code j}, source indices {@code start[j]..start[j]+count[j]-1}. */
    private record Taps(int[] start, int[] count, float[] weight, int stride) {}

    /**
     * Resamples {@code src[(x, y)]} for the source rectangle at ({@code sx}, {@code sy}) of size
     * {@code sw x sh} (fractional) into all of {@code out}, mirrored left-right if {@code flip}.
     */
    static void resample(byte[] src, int srcW, double sx, double sy, double sw, double sh, boolean flip, Planes out) {
        int srcH = src.length / 3 / srcW;
        Taps hx = taps(sx, sw, out.width, srcW);
        Taps vy = taps(sy, sh, out.height, srcH);
        int x0 = hx.start()[0];
        int x1 = 0;
        for (int x = 0; x < out.width; x++) {
            x1 = Math.max(x1, hx.start()[x] + hx.count()[x]);
        }
        int span = x1 - x0;
        float[] row = new float[3 * span];
        for (int y = 0; y < out.height; y++) {
            Arrays.fill(row, 0f);
            int vs = vy.start()[y];
            for (int t = 0; t < vy.count()[y]; t++) {
                float wgt = vy.weight()[y * vy.stride() + t];
                int o = 3 * ((vs + t) * srcW + x0);
                for (int k = 0; k < 3 * span; k++) {
                    row[k] += wgt * (src[o + k] & 0xFF);
                }
            }
            int base = y * out.width;
            for (int x = 0; x < out.width; x++) {
                float r = 0;
                float g = 0;
                float b = 0;
                int hs = hx.start()[x] - x0;
                for (int t = 0; t < hx.count()[x]; t++) {
                    float wgt = hx.weight()[x * hx.stride() + t];
                    int k = 3 * (hs + t);
                    r += wgt * row[k];
                    g += wgt * row[k + 1];
                    b += wgt * row[k + 2];
                }
                int i = base + (flip ? out.width - 1 - x : x);
                out.r[i] = r;
                out.g[i] = g;
                out.b[i] = b;
            }
        }
    }

    private static Taps taps(double s0, double len, int n, int limit) {
        double scale = len / n;
        int stride = (int) Math.ceil(scale) + 2;
        int[] start = new int[n];
        int[] count = new int[n];
        float[] weight = new float[n * stride];
        for (int j = 0; j < n; j++) {
            if (scale >= 1) {
                double a = s0 + j * scale;
                double b = Math.min(a + scale, limit);
                int i0 = Math.min((int) Math.floor(a), limit - 1);
                int i1 = Math.max(i0 + 1, Math.min((int) Math.ceil(b), limit));
                start[j] = i0;
                count[j] = i1 - i0;
                double total = 0;
                for (int i = i0; i < i1; i++) {
                    total += Math.max(0, Math.min(i + 1, b) - Math.max(i, a));
                }
                for (int i = i0; i < i1; i++) {
                    double ov = Math.max(0, Math.min(i + 1, b) - Math.max(i, a));
                    weight[j * stride + i - i0] = (float) (total > 0 ? ov / total : 1.0 / (i1 - i0));
                }
            } else {
                double c = s0 + (j + 0.5) * scale - 0.5;
                int i0 = Math.clamp((long) Math.floor(c), 0, limit - 1);
                int i1 = Math.min(i0 + 1, limit - 1);
                float f = (float) Math.clamp(c - i0, 0.0, 1.0);
                start[j] = i0;
                count[j] = i1 - i0 + 1;
                weight[j * stride] = count[j] == 1 ? 1f : 1 - f;
                if (count[j] == 2) {
                    weight[j * stride + 1] = f;
                }
            }
        }
        return new Taps(start, count, weight, stride);
    }
}
