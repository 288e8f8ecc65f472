package io.stoke.loader.augment;

import java.util.List;
import java.util.random.RandomGenerator;

/**
 * AugMix's draws for images of one size, as torchvision's {@code AugMix.forward} makes them: the
 * weights {@code m ~ Dirichlet(alpha, alpha)} of the original and the mix, the chains' weights
 * {@code Dirichlet(alpha, ..., alpha)}, then for each chain its depth ({@code chain_depth}, or 1 to
 * 3 uniformly) and for each step an op uniformly from the augmentation space, a bin uniformly below
 * {@code severity} where the op has a magnitude, and a sign where it is signed. A Dirichlet sample
 * is Gamma(alpha) samples over their sum, as torch's {@code _sample_dirichlet} computes it; the
 * Gamma samples are Marsaglia and Tsang's, from the sample's counter-based stream, so every draw
 * depends on (seed, epoch, sample) alone. One per worker: {@link #draw} keeps the chains' Gamma
 * samples in an array of its own.
 */
public final class AugMixDraws {
    /** torchvision's {@code _PARAMETER_MAX}: the bins of every AugMix table. */
    static final int BINS = 10;

    private final AugmentPolicy policy;
    private final AugmentPolicy.AugMixSettings settings;
    private final List<AugmentOp> ops;
    private final float[][] tables = new float[AugmentOp.values().length][];
    private final boolean[] signed = new boolean[AugmentOp.values().length];
    private final float alpha;
    /** The chains' Gamma samples, before they are normalised. */
    private final double[] gammas;

    /** For images of {@code width x height} (the crop that AugMix augments). */
    public AugMixDraws(AugmentPolicy policy, int width, int height) {
        if (policy.kind() != AugmentPolicy.Kind.AUG_MIX) {
            throw new IllegalArgumentException(policy.kind().torchvisionName() + " is not AugMix");
        }
        this.policy = policy;
        this.settings = policy.augMix();
        this.ops = policy.ops();
        this.alpha = (float) settings.alpha();
        this.gammas = new double[settings.mixtureWidth()];
        for (AugmentOp op : ops) {
            float[] t = switch (op) {
                case SHEAR_X, SHEAR_Y -> Magnitudes.linspace(0.0, 0.3, BINS);
                case TRANSLATE_X -> Magnitudes.linspace(0.0, width / 3.0, BINS);
                case TRANSLATE_Y -> Magnitudes.linspace(0.0, height / 3.0, BINS);
                case ROTATE -> Magnitudes.linspace(0.0, 30.0, BINS);
                case BRIGHTNESS, COLOR, CONTRAST, SHARPNESS -> Magnitudes.linspace(0.0, 0.9, BINS);
                case POSTERIZE -> posterize(policy.v2());
                case SOLARIZE ->
                    policy.v2() ? Magnitudes.linspace(1.0, 0.0, BINS) : Magnitudes.linspace(255.0, 0.0, BINS);
                default -> null;
            };
            tables[op.ordinal()] = t;
            signed[op.ordinal()] = t != null && op != AugmentOp.POSTERIZE && op != AugmentOp.SOLARIZE;
        }
    }

    /**
     * v1: {@code 4 - (arange(10) / (9 / 4)).round().int()}; v2 rounds after the subtraction,
     * {@code (4 - arange(10) / (9 / 4)).round().int()}. Both in float32, rounding half to even.
     */
    private static float[] posterize(boolean v2) {
        float[] out = new float[BINS];
        float divisor = (float) ((BINS - 1) / 4.0);
        for (int i = 0; i < BINS; i++) {
            float q = (float) i / divisor;
            out[i] = v2 ? (float) Math.rint(4f - q) : 4 - (int) Math.rint(q);
        }
        return out;
    }

    public AugmentPolicy policy() {
        return policy;
    }

    /** A holder for this policy's draws. */
    public AugMixDrawn newDrawn() {
        return new AugMixDrawn(settings.mixtureWidth(), settings.maxDepth());
    }

    /** The magnitude table of {@code op} (float32 values, as torch holds them), or null. */
    public float[] table(AugmentOp op) {
        float[] t = tables[op.ordinal()];
        return t == null ? null : t.clone();
    }

    /** Whether {@code op}'s magnitude is negated half the time. */
    public boolean signed(AugmentOp op) {
        return signed[op.ordinal()];
    }

    /** Fills {@code out} with one image's draws, from {@code random}. */
    public AugMixDrawn draw(RandomGenerator random, AugMixDrawn out) {
        double g0 = gamma(random, alpha);
        double g1 = gamma(random, alpha);
        out.original = (float) (g0 / (g0 + g1));
        out.beta = (float) (g1 / (g0 + g1));
        double sum = 0;
        for (int i = 0; i < gammas.length; i++) {
            gammas[i] = gamma(random, alpha);
            sum += gammas[i];
        }
        for (int i = 0; i < gammas.length; i++) {
            out.mixing[i] = (float) (gammas[i] / sum);
            out.weights[i] = out.mixing[i] * out.beta; // float32, as torch's `* m[:, 1]`
        }
        out.count = 0;
        for (int c = 0; c < out.depths.length; c++) {
            int depth = settings.chainDepth() > 0 ? settings.chainDepth() : 1 + random.nextInt(3);
            out.depths[c] = depth;
            for (int d = 0; d < depth; d++) {
                AugmentOp op = ops.get(random.nextInt(ops.size()));
                float[] t = tables[op.ordinal()];
                int bin = t == null ? -1 : random.nextInt(settings.severity());
                boolean negate = signed[op.ordinal()] && random.nextInt(2) == 1;
                int k = out.count++;
                out.ops[k] = op;
                out.bins[k] = bin;
                out.negative[k] = negate;
                double m = bin < 0 ? 0.0 : t[bin];
                out.magnitudes[k] = negate ? -m : m;
            }
        }
        return out;
    }

    /**
     * A Gamma(shape, 1) sample: Marsaglia and Tsang's method, boosted by {@code U^(1/shape)} below
     * shape 1. Kept above zero, as torch keeps its samples at the smallest normal float, so that a
     * tiny alpha cannot give 0 / 0.
     */
    static double gamma(RandomGenerator random, double shape) {
        double boost = 1.0;
        if (shape < 1.0) {
            boost = Math.pow(1.0 - random.nextDouble(), 1.0 / shape);
            shape += 1.0;
        }
        double d = shape - 1.0 / 3.0;
        double c = 1.0 / Math.sqrt(9.0 * d);
        while (true) {
            double x;
            double v;
            do {
                x = random.nextGaussian();
                v = 1.0 + c * x;
            } while (v <= 0.0);
            v = v * v * v;
            double u = 1.0 - random.nextDouble();
            double xx = x * x;
            if (u < 1.0 - 0.0331 * xx * xx || Math.log(u) < 0.5 * xx + d * (1.0 - v + Math.log(v))) {
                return Math.max(Float.MIN_NORMAL, d * v * boost);
            }
        }
    }
}
