package io.stoke.testdata;

import java.util.Arrays;

/**
 * Noise with a power-law spectrum, built as a Laplacian pyramid: white noise at the coarsest
 * grid, upsampled by two and topped up with fresh white noise at every finer grid. Each octave
 * adds its own band, so the per-octave amplitudes shape the spectrum directly: equal amplitudes
 * give the 1/f amplitude spectrum of natural photographs. O(pixels), unlike an FFT.
 */
final class FractalNoise {
    private float[] a = new float[0];
    private float[] b = new float[0];
    private float[] tmp = new float[0];

    /**
     * Fills {@code out[0, w*h)} (row-major, pitch {@code w}). {@code amps[k]} is the amplitude of
     * octave {@code k}, where octave 0 has a period of about one pixel and octave {@code k} about
     * {@code 2^k} pixels; octaves beyond the array contribute nothing.
     */
    void fill(float[] out, int w, int h, float[] amps, Rng rng) {
        int top = amps.length - 1;
        int gw = gridW(w, top);
        int gh = gridW(h, top);
        float[] cur = ensureA(gw * gh);
        addNoise(cur, gw * gh, amps[top], rng, true);
        for (int k = top - 1; k >= 0; k--) {
            int nw = gridW(w, k);
            int nh = gridW(h, k);
            float[] next = ensureB(nw * nh);
            upsample(cur, gw, gh, next, nw, nh);
            addNoise(next, nw * nh, amps[k], rng, false);
            swap();
            cur = a;
            gw = nw;
            gh = nh;
        }
        for (int y = 0; y < h; y++) {
            System.arraycopy(cur, y * gw, out, y * w, w);
        }
    }

    /** Grid width at octave {@code k}: just enough that doubling it covers the next octave. */
    private static int gridW(int w, int k) {
        return ((w - 1) >> k) + 2;
    }

    private static void addNoise(float[] g, int n, float amp, Rng rng, boolean overwrite) {
        if (amp == 0f) {
            if (overwrite) {
                Arrays.fill(g, 0, n, 0f);
            }
            return;
        }
        for (int i = 0; i < n; i++) {
            float v = amp * rng.signed();
            g[i] = overwrite ? v : g[i] + v;
        }
    }

    /**
     * Doubling by cubic B-spline subdivision (even outputs 1-6-1, odd outputs 1-1): smooth to the
     * second derivative, where repeated bilinear doubling leaves a visible grid of creases.
     * Separable: rows into {@code tmp}, then columns. The coarse grid is large enough by
     * {@link #gridW}'s choice; only the even outputs' outer neighbour is clamped.
     */
    private void upsample(float[] src, int sw, int sh, float[] dst, int dw, int dh) {
        if (tmp.length < sh * dw) {
            tmp = new float[sh * dw];
        }
        float[] t = tmp;
        for (int y = 0; y < sh; y++) {
            int s0 = y * sw;
            int o = y * dw;
            for (int x = 0; x < dw; x++) {
                int i = x >> 1;
                if ((x & 1) == 0) {
                    float l = src[s0 + Math.max(i - 1, 0)];
                    float r = src[s0 + Math.min(i + 1, sw - 1)];
                    t[o + x] = 0.125f * (l + r) + 0.75f * src[s0 + i];
                } else {
                    t[o + x] = 0.5f * (src[s0 + i] + src[s0 + i + 1]);
                }
            }
        }
        for (int y = 0; y < dh; y++) {
            int i = y >> 1;
            int o = y * dw;
            if ((y & 1) == 0) {
                int u = Math.max(i - 1, 0) * dw;
                int c = i * dw;
                int d = Math.min(i + 1, sh - 1) * dw;
                for (int x = 0; x < dw; x++) {
                    dst[o + x] = 0.125f * (t[u + x] + t[d + x]) + 0.75f * t[c + x];
                }
            } else {
                int c = i * dw;
                int d = c + dw;
                for (int x = 0; x < dw; x++) {
                    dst[o + x] = 0.5f * (t[c + x] + t[d + x]);
                }
            }
        }
    }

    private float[] ensureA(int n) {
        if (a.length < n) {
            a = new float[n];
        }
        return a;
    }

    private float[] ensureB(int n) {
        if (b.length < n) {
            b = new float[n];
        }
        return b;
    }

    private void swap() {
        float[] t = a;
        a = b;
        b = t;
    }
}
