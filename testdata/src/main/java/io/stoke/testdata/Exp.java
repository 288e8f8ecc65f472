package io.stoke.testdata;

/**
 * {@code exp} by table and linear interpolation: called for every pixel, where
 * {@link StrictMath#exp} would dominate generation time and {@link Math#exp} may differ between
 * JVMs (and so would the dataset's bytes).
 */
final class Exp {
    private static final float LO = -8f;
    private static final float HI = 8f;
    private static final int STEPS_PER_UNIT = 256;
    private static final float[] TABLE = new float[(int) ((HI - LO) * STEPS_PER_UNIT) + 2];

    static {
        for (int i = 0; i < TABLE.length; i++) {
            TABLE[i] = (float) StrictMath.exp(LO + (double) i / STEPS_PER_UNIT);
        }
    }

    private Exp() {}

    /** e^x for x in [-8, 8] (clamped outside), relative error below 2e-6. */
    static float of(float x) {
        float t = (Math.min(Math.max(x, LO), HI) - LO) * STEPS_PER_UNIT;
        int i = Math.min((int) t, TABLE.length - 2);
        float f = t - i;
        return TABLE[i] + f * (TABLE[i + 1] - TABLE[i]);
    }
}
