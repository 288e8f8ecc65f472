package io.stoke.testdata;

/**
 * Paints a photo-like scene: a per-image palette laid out by large soft regions, lit by smooth
 * gradients and a vignette, textured by 1/f noise whose fine octaves come and go across the
 * frame (sky next to foliage), plus a handful of objects with hard or soft edges and their own shading
 * and texture. Flat synthetic images decode several times faster than photographs because JPEG's
 * entropy decoder has little to do; this is built to give the decoder the same work a photograph
 * does, measured as bits per pixel at ImageNet's qualities.
 *
 * <p>One instance per worker thread: it keeps its scratch fields between images.
 */
final class ProceduralScene {
    private final FractalNoise noise = new FractalNoise();
    private float[] region = new float[0];
    private float[] mask = new float[0];
    private float[] coarse = new float[0];
    private float[] fine = new float[0];
    private float[] chromaA = new float[0];
    private float[] chromaB = new float[0];

    // A period of sine: stripes need one per pixel, and a table is exact on every JVM.
    private static final float[] SINE = new float[1024];

    static {
        for (int i = 0; i < SINE.length; i++) {
            SINE[i] = (float) StrictMath.sin(2 * Math.PI * i / SINE.length);
        }
    }

    /** Fills {@code p} (already sized) from {@code rng}. */
    void paint(Planes p, Rng rng) {
        int w = p.width;
        int h = p.height;
        int n = w * h;
        ensure(n);
        int top = 32 - Integer.numberOfLeadingZeros(Math.max(w, h));
        float[][] palette = palette(rng);

        noise.fill(region, w, h, octaves(top, 5, top, 1f, 1.6f + (float) rng.nextDouble()), rng);
        normalise(region, n);
        noise.fill(mask, w, h, octaves(top, 4, top, 1f, 1.3f), rng);
        normalise(mask, n);
        float alpha = (float) rng.range(0.85, 1.25);
        float midAmp = (float) rng.range(0.035, 0.07);
        noise.fill(coarse, w, h, octaves(top, 4, top, midAmp, alpha), rng);
        // Tuned so that mean bits per pixel at qualities 75-95 lands near ImageNet's 4.
        // Log-uniform, so the set spans smooth studio shots to busy foliage as ImageNet does.
        float fineAmp = (float) (0.57 * StrictMath.exp(rng.range(-0.6, 0.6)));
        // Tilted towards its coarser octaves: visible texture rather than pixel speckle.
        noise.fill(fine, w, h, octaves(top, 0, 3, fineAmp, alpha + 0.6f), rng);
        float chromaAmp = (float) rng.range(4, 14);
        noise.fill(chromaA, w, h, octaves(top, 3, top, chromaAmp, 1.2f), rng);
        noise.fill(chromaB, w, h, octaves(top, 3, top, chromaAmp, 1.2f), rng);

        background(p, palette, rng);
        // Mostly small objects, a few large ones: clutter is where photographs keep their edges.
        int objects = 4 + rng.nextInt(14);
        for (int i = 0; i < objects; i++) {
            object(p, palette, rng);
        }
    }

    /** Palette entries are {r, g, b} in 0..1: one hue family plus an accent, as scenes tend to be. */
    private static float[][] palette(Rng rng) {
        // Mostly nature's hues (earth, foliage, sky), sometimes anything, as in a photo collection.
        double[] natural = {0.07, 0.1, 0.25, 0.3, 0.58};
        double hue = rng.chance(0.6) ? natural[rng.nextInt(natural.length)] + rng.range(-0.04, 0.04) : rng.nextDouble();
        double[] spreads = {0.04, 0.08, 0.15, 0.33, 0.5};
        double spread = spreads[rng.nextInt(spreads.length)];
        float[][] pal = new float[5][];
        for (int i = 0; i < pal.length; i++) {
            double hi = hue + (i == pal.length - 1 ? spread : spread * rng.range(-0.3, 0.3));
            pal[i] = hsv(hi, rng.range(0.05, 0.6), rng.range(0.2, 0.95));
        }
        return pal;
    }

    private void background(Planes p, float[][] pal, Rng rng) {
        int w = p.width;
        int h = p.height;
        float steep = (float) rng.range(1, 7);
        float maskLo = (float) rng.range(0.05, 0.5);
        float base = (float) rng.range(0.75, 1.05);
        float gx = (float) rng.range(-0.35, 0.35) / w;
        float gy = (float) rng.range(-0.45, 0.25) / h;
        float cx = (float) rng.range(0.2, 0.8) * w;
        float cy = (float) rng.range(0.2, 0.8) * h;
        float vig = (float) rng.range(0, 0.8) / ((float) w * w + (float) h * h);
        int last = pal.length - 2; // the accent is for objects
        for (int y = 0; y < h; y++) {
            float dy = y - cy;
            float rowLight = base + gy * (y - 0.5f * h) - vig * dy * dy;
            int o = y * w;
            for (int x = 0; x < w; x++) {
                int i = o + x;
                float dx = x - cx;
                float light = rowLight + gx * (x - 0.5f * w) - vig * dx * dx;
                float pos = region[i] * last;
                int k = Math.min((int) pos, last - 1);
                float f = clamp01((pos - k - 0.5f) * steep + 0.5f);
                float m = maskLo + (1 - maskLo) * mask[i];
                // Detail multiplies exposure, as reflectance does: no negative light, no sign flips.
                float lum = 255f * light * Exp.of(coarse[i] + m * fine[i]);
                float[] c0 = pal[k];
                float[] c1 = pal[k + 1];
                p.r[i] = lum * (c0[0] + f * (c1[0] - c0[0])) + chromaA[i];
                p.g[i] = lum * (c0[1] + f * (c1[1] - c0[1])) - 0.5f * (chromaA[i] + chromaB[i]);
                p.b[i] = lum * (c0[2] + f * (c1[2] - c0[2])) + chromaB[i];
            }
        }
    }

    /**
     * An ellipse, a rotated box or a thin bar, blended by coverage from a signed distance so that
     * one edge width parameter gives anything from a crisp cut-out to an out-of-focus blob.
     */
    private void object(Planes p, float[][] pal, Rng rng) {
        int w = p.width;
        int h = p.height;
        float minSide = Math.min(w, h);
        int kind = rng.nextInt(10); // 0-4 ellipse, 5-7 box, 8-9 bar
        double size = rng.nextDouble();
        float a = (float) (0.02 + 0.38 * size * size) * minSide;
        float b = a * (float) rng.range(0.3, 1.0);
        if (kind >= 8) {
            a = (float) rng.range(0.2, 0.9) * minSide;
            b = (float) rng.range(0.6, 4);
        }
        float cx = (float) rng.range(-0.1, 1.1) * w;
        float cy = (float) rng.range(-0.1, 1.1) * h;
        double angle = rng.range(0, Math.PI);
        float cos = (float) StrictMath.cos(angle);
        float sin = (float) StrictMath.sin(angle);
        float soft = rng.chance(0.45) ? (float) rng.range(0.6, 1.5) : (float) rng.range(1.5, 14);
        float opacity = (float) rng.range(0.75, 1.0);
        float[] col = rng.chance(0.7)
                ? pal[rng.nextInt(pal.length)]
                : hsv(rng.nextDouble(), rng.range(0.1, 0.9), rng.range(0.15, 1));
        float texture = (float) rng.range(0.2, 1.0);
        float light = (float) rng.range(0.7, 1.15);
        float shade = (float) rng.range(-0.35, 0.35);
        boolean flip = rng.chance(0.5);
        // Wood, fabric, bark: oriented periodic texture, its phase warped by the noise field.
        float stripes = rng.chance(0.35) ? (float) rng.range(0.08, 0.3) : 0f;
        float freq = (float) (SINE.length / rng.range(3, 14));
        float warp = (float) rng.range(0, 12) * SINE.length;

        float reach = Math.max(a, b) + 2 * soft;
        int x0 = Math.max(0, (int) (cx - reach));
        int x1 = Math.min(w, (int) (cx + reach) + 1);
        int y0 = Math.max(0, (int) (cy - reach));
        int y1 = Math.min(h, (int) (cy + reach) + 1);
        float invA = 1 / a;
        float invB = 1 / b;
        float minAB = Math.min(a, b);
        float invSoft = 1 / soft;
        int n = w * h;
        for (int y = y0; y < y1; y++) {
            float py = y - cy;
            for (int x = x0; x < x1; x++) {
                float px = x - cx;
                float u = px * cos + py * sin;
                float v = py * cos - px * sin;
                float sd;
                if (kind < 5) {
                    float nu = u * invA;
                    float nv = v * invB;
                    sd = ((float) Math.sqrt(nu * nu + nv * nv) - 1) * minAB;
                } else {
                    sd = Math.max(Math.abs(u) - a, Math.abs(v) - b);
                }
                float cover = clamp01(0.5f - sd * invSoft) * opacity;
                if (cover <= 0f) {
                    continue;
                }
                int i = y * w + x;
                // Texture from the same fields read mirrored, so it does not line up with the background's.
                int j = flip ? n - 1 - i : (h - 1 - y) * w + x;
                float lum = 255f * light * (1f + shade * u * invA) * Exp.of(texture * (coarse[j] + fine[j]));
                if (stripes != 0f) {
                    lum *= 1f + stripes * SINE[(int) (v * freq + warp * coarse[j]) & (SINE.length - 1)];
                }
                p.r[i] += cover * (lum * col[0] - p.r[i]);
                p.g[i] += cover * (lum * col[1] - p.g[i]);
                p.b[i] += cover * (lum * col[2] - p.b[i]);
            }
        }
    }

    /** Amplitudes for octaves {@code from..to} (inclusive), tilted by {@code alpha} (1 = 1/f). */
    private static float[] octaves(int top, int from, int to, float amp, float alpha) {
        float[] amps = new float[top + 1];
        for (int k = from; k <= Math.min(to, top); k++) {
            amps[k] = amp * (float) StrictMath.pow(2, (k - from) * (alpha - 1) * 0.5);
        }
        return amps;
    }

    /** Stretches a field to [0, 1], so palettes and masks use their full range in every image. */
    private static void normalise(float[] f, int n) {
        float lo = Float.POSITIVE_INFINITY;
        float hi = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            lo = Math.min(lo, f[i]);
            hi = Math.max(hi, f[i]);
        }
        float s = hi > lo ? 1 / (hi - lo) : 0;
        for (int i = 0; i < n; i++) {
            f[i] = (f[i] - lo) * s;
        }
    }

    private static float[] hsv(double hue, double sat, double val) {
        double hh = (hue - Math.floor(hue)) * 6;
        int sector = (int) hh;
        double f = hh - sector;
        double p = val * (1 - sat);
        double q = val * (1 - sat * f);
        double t = val * (1 - sat * (1 - f));
        double[] rgb = switch (sector) {
            case 0 -> new double[] {val, t, p};
            case 1 -> new double[] {q, val, p};
            case 2 -> new double[] {p, val, t};
            case 3 -> new double[] {p, q, val};
            case 4 -> new double[] {t, p, val};
            default -> new double[] {val, p, q};
        };
        return new float[] {(float) rgb[0], (float) rgb[1], (float) rgb[2]};
    }

    private static float clamp01(float v) {
        return v < 0 ? 0 : Math.min(v, 1);
    }

    private void ensure(int n) {
        if (region.length < n) {
            region = new float[n];
            mask = new float[n];
            coarse = new float[n];
            fine = new float[n];
            chromaA = new float[n];
            chromaB = new float[n];
        }
    }
}
