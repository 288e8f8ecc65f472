package io.stoke.loader.dataset;

/**
 * Noise with a power-law spectrum, built as a Laplacian pyramid: white noise at the coarsest
 * grid, upsampled by two and topped up with fresh white noise at every finer grid. Each octave
 * adds its own band, so the per-octave amplitudes shape the spectrum directly: equal amplitudes
 * give the 1/f amplitude spectrum of natural photographs. O(pixels), unlike an FFT.
 */
final class FractalNoise {
    private float[] a = new float[0];
    private float[] b = new float[0];

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
            upsample(cur, gw, next, nw, nh);
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
                java.util.Arrays.fill(g, 0, n, 0f);
            }
            return;
        }
        for (int i = 0; i < n; i++) {
            float v = amp * rng.signed();
            g[i] = overwrite ? v : g[i] + v;
        }
    }

    /** Bilinear doubling; the coarse grid is always large enough by {@link #gridW}'s choice. */
    private static void upsample(float[] src, int sw, float[] dst, int dw, int dh) {
        for (int y = 0; y < dh; y++) {
            int r0 = (y >> 1) * sw;
            int r1 = (y & 1) == 0 ? r0 : r0 + sw;
            int o = y * dw;
            for (int x = 0; x < dw; x++) {
                int x0 = x >> 1;
                int x1 = x0 + (x & 1);
                dst[o + x] = 0.25f * (src[r0 + x0] + src[r0 + x1] + src[r1 + x0] + src[r1 + x1]);
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
