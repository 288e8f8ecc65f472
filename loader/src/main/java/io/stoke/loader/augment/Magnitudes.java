package io.stoke.loader.augment;

/**
 * The magnitude tables of torchvision's policies, computed as torch computes them in float32:
 * {@code torch.linspace} (from the start for the first half, from the end for the second, each
 * value one fused multiply-add, as torch 2's CPU kernel gives on x86-64) and the posterize table's
 * {@code (8 - (arange(n) / ((n - 1) / k)).round().int())}.
 */
final class Magnitudes {
    private Magnitudes() {}

    /** {@code torch.linspace(start, end, steps)}, float32. */
    static float[] linspace(double start, double end, int steps) {
        float s = (float) start;
        float e = (float) end;
        float[] out = new float[steps];
        if (steps == 1) {
            out[0] = s;
            return out;
        }
        float step = (e - s) / (float) (steps - 1);
        int half = steps / 2;
        for (int i = 0; i < steps; i++) {
            out[i] = i < half
                    ? (float) Math.fma((double) step, i, (double) s)
                    : (float) Math.fma(-(double) step, steps - i - 1, (double) e);
        }
        return out;
    }

    /** {@code top - (torch.arange(steps) / ((steps - 1) / span)).round().int()}, as floats. */
    static float[] posterize(int top, double span, int steps) {
        float[] out = new float[steps];
        float divisor = (float) ((steps - 1) / span);
        for (int i = 0; i < steps; i++) {
            out[i] = top - (int) Math.rint((float) i / divisor);
        }
        return out;
    }
}
