package io.stoke.testdata;

/**
 * Adds sensor-like grain and quantises to 8 bits. Grain is the finest texture a camera records
 * and what JPEG spends most of its high-quality bits on, so it is part of what makes file sizes
 * and decode times honest. Luma grain is common to the three channels; a weaker chroma part
 * differs per channel, as in a demosaiced raw.
 */
final class Grain {
    // Sum of two uniforms on [-1, 1) has standard deviation sqrt(2/3); this makes it 1.
    private static final float UNIT = 1.2247449f;

    private Grain() {}

    /** Writes interleaved RGB, 3 bytes a pixel, pitch {@code 3 * width}. */
    static void toRgb(Planes p, float lumaSigma, float chromaSigma, Rng rng, byte[] out) {
        float ls = lumaSigma * UNIT;
        float cs = chromaSigma * UNIT;
        int n = p.width * p.height;
        for (int i = 0, o = 0; i < n; i++, o += 3) {
            float l = ls * (rng.signed() + rng.signed());
            out[o] = clamp(p.r[i] + l + cs * rng.signed());
            out[o + 1] = clamp(p.g[i] + l + cs * rng.signed());
            out[o + 2] = clamp(p.b[i] + l + cs * rng.signed());
        }
    }

    /** Writes one byte a pixel: Rec. 601 luma, as a camera's or editor's grayscale conversion. */
    static void toGray(Planes p, float lumaSigma, Rng rng, byte[] out) {
        float ls = lumaSigma * UNIT;
        int n = p.width * p.height;
        for (int i = 0; i < n; i++) {
            float y = 0.299f * p.r[i] + 0.587f * p.g[i] + 0.114f * p.b[i];
            out[i] = clamp(y + ls * (rng.signed() + rng.signed()));
        }
    }

    /**
     * Values above {@link #KNEE} roll off towards 255 instead of clipping, like a camera's tone
     * curve: bright textured areas keep their texture rather than turning into flat white.
     */
    private static final int KNEE = 200;

    private static final byte[] TONE = new byte[1024];

    static {
        for (int v = 0; v < TONE.length; v++) {
            double out = v <= KNEE ? v : KNEE + (255.5 - KNEE) * (1 - StrictMath.exp(-(v - KNEE) / (255.5 - KNEE)));
            TONE[v] = (byte) Math.min(255, (int) out);
        }
    }

    private static byte clamp(float v) {
        int q = (int) (v + 0.5f);
        return TONE[q < 0 ? 0 : Math.min(q, TONE.length - 1)];
    }
}
