package io.stoke.loader.augment;

import java.util.List;
import java.util.random.RandomGenerator;

/**
 * A policy's draws for images of one size: its magnitude tables, computed once, and
 * {@link #draw}, which picks an image's ops from the sample's random stream as torchvision's
 * {@code forward} does. TrivialAugmentWide: an op uniformly, a bin uniformly where the op has a
 * magnitude, then a sign where it is signed. RandAugment: {@code num_ops} times an op uniformly,
 * at the fixed bin, then a sign. AutoAugment: a sub-policy uniformly, two uniforms and two signs,
 * each step applied when its uniform is at most its probability. ColorJitter: whether it runs (a
 * uniform below its probability, as RandomApply), an order of its four ops uniformly
 * ({@code torch.randperm(4)}), each factor that is on uniformly in its range, in float32 as
 * {@code torch.empty(1).uniform_(lo, hi)}; then whether the grey follows (a uniform below its
 * probability, as RandomGrayscale). The same distribution as
 * torchvision's (tested against its draws), from Stoke's counter-based stream, so a sample's ops
 * depend on (seed, epoch, sample) alone.
 */
public final class PolicyDraws {
    private final AugmentPolicy policy;
    private final List<AugmentOp> ops;
    private final float[][] tables = new float[AugmentOp.values().length][];
    private final boolean[] signed = new boolean[AugmentOp.values().length];
    private final AutoAugmentPolicies.Step[][] subPolicies;

    /** For images of {@code width x height} (the crop that the policy augments). */
    public PolicyDraws(AugmentPolicy policy, int width, int height) {
        this.policy = policy;
        this.ops = policy.ops();
        boolean wide = policy.kind() == AugmentPolicy.Kind.TRIVIAL_AUGMENT_WIDE;
        int n = policy.bins();
        double shear = wide ? 0.99 : 0.3;
        double colour = wide ? 0.99 : 0.9;
        for (AugmentOp op : policy.kind() == AugmentPolicy.Kind.COLOR_JITTER ? List.<AugmentOp>of() : ops) {
            float[] t = switch (op) {
                case SHEAR_X, SHEAR_Y -> Magnitudes.linspace(0.0, shear, n);
                case TRANSLATE_X -> Magnitudes.linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * width, n);
                case TRANSLATE_Y -> Magnitudes.linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * height, n);
                case ROTATE -> Magnitudes.linspace(0.0, wide ? 135.0 : 30.0, n);
                case BRIGHTNESS, COLOR, CONTRAST, SHARPNESS -> Magnitudes.linspace(0.0, colour, n);
                case POSTERIZE -> Magnitudes.posterize(8, wide ? 6.0 : 4.0, n);
                case SOLARIZE -> policy.v2() ? Magnitudes.linspace(1.0, 0.0, n) : Magnitudes.linspace(255.0, 0.0, n);
                default -> null;
            };
            tables[op.ordinal()] = t;
            signed[op.ordinal()] = t != null && op != AugmentOp.POSTERIZE && op != AugmentOp.SOLARIZE;
        }
        subPolicies = policy.kind().autoAugment() ? AutoAugmentPolicies.of(policy.kind()) : null;
    }

    public AugmentPolicy policy() {
        return policy;
    }

    /** A holder for this policy's draws. */
    public Drawn newDrawn() {
        return new Drawn(policy.maxOps());
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

    /** Fills {@code out} with one image's ops, drawn from {@code random}. */
    public Drawn draw(RandomGenerator random, Drawn out) {
        out.count = 0;
        switch (policy.kind()) {
            case TRIVIAL_AUGMENT_WIDE -> {
                AugmentOp op = ops.get(random.nextInt(ops.size()));
                float[] t = tables[op.ordinal()];
                int bin = t == null ? -1 : random.nextInt(t.length);
                add(out, op, bin, random);
            }
            case RAND_AUGMENT -> {
                for (int i = 0; i < policy.numOps(); i++) {
                    AugmentOp op = ops.get(random.nextInt(ops.size()));
                    add(out, op, tables[op.ordinal()] == null ? -1 : policy.magnitude(), random);
                }
            }
            case COLOR_JITTER -> jitter(random, out);
            default -> {
                AutoAugmentPolicies.Step[] steps = subPolicies[random.nextInt(subPolicies.length)];
                // All four drawn whatever the outcome, as torchvision's get_params does.
                double u0 = random.nextDouble();
                double u1 = random.nextDouble();
                boolean positive0 = random.nextInt(2) == 1;
                boolean positive1 = random.nextInt(2) == 1;
                step(out, steps[0], u0, positive0);
                step(out, steps[1], u1, positive1);
            }
        }
        return out;
    }

    /**
     * RandomApply's draw, then ColorJitter's {@code get_params} and {@code forward}: the four ops in a
     * uniform order, each that is on with its factor; then RandomGrayscale's draw. The magnitudes are what {@link AugmentStage#run} takes: the factor
     * less 1 for brightness, contrast and saturation (it adds the 1 back, exactly: the factor is a
     * float32), the factor itself for hue.
     */
    private void jitter(RandomGenerator random, Drawn out) {
        AugmentPolicy.ColorJitterSettings jitter = policy.jitter();
        if (jitter.probability() >= 1.0 || random.nextDouble() < jitter.probability()) {
            jitterOps(jitter, random, out);
        }
        if (jitter.grayscale() > 0.0 && (jitter.grayscale() >= 1.0 || random.nextDouble() < jitter.grayscale())) {
            out.add(AugmentOp.GRAYSCALE, -1, false, 0.0);
        }
    }

    private void jitterOps(AugmentPolicy.ColorJitterSettings jitter, RandomGenerator random, Drawn out) {
        int[] order = out.order;
        for (int fn = 0; fn < 4; fn++) {
            order[fn] = fn;
        }
        for (int k = 3; k > 0; k--) { // Fisher-Yates: every order equally likely, as randperm(4)
            int j = random.nextInt(k + 1);
            int t = order[k];
            order[k] = order[j];
            order[j] = t;
        }
        double[] factor = out.factors;
        for (int fn = 0; fn < 4; fn++) { // no allocation: this runs for every image
            factor[fn] = jitter.on(fn) ? uniform(random, jitter.low(fn), jitter.high(fn)) : Double.NaN;
        }
        for (int k = 0; k < 4; k++) {
            int fn = order[k];
            if (!Double.isNaN(factor[fn])) {
                AugmentOp op = AugmentPolicy.ColorJitterSettings.op(fn);
                out.add(op, -1, false, op == AugmentOp.HUE ? factor[fn] : factor[fn] - 1.0);
            }
        }
    }

    /** {@code torch.empty(1).uniform_(lo, hi)}: 24 random bits scaled in float32, kept within the range. */
    private static double uniform(RandomGenerator random, double lo, double hi) {
        float u = (random.nextInt() >>> 8) * 0x1.0p-24f;
        float from = (float) lo;
        float to = (float) hi;
        float f = u * (to - from) + from;
        return Math.min(Math.max(f, from), to);
    }

    private void add(Drawn out, AugmentOp op, int bin, RandomGenerator random) {
        boolean negate = signed[op.ordinal()] && random.nextInt(2) == 1;
        out.add(op, bin, negate, bin < 0 ? 0.0 : tables[op.ordinal()][bin]);
    }

    private void step(Drawn out, AutoAugmentPolicies.Step step, double u, boolean positive) {
        if (u <= step.probability()) {
            AugmentOp op = step.op();
            boolean negate = signed[op.ordinal()] && !positive; // torchvision: signs[i] == 0 negates
            out.add(op, step.bin(), negate, step.bin() < 0 ? 0.0 : tables[op.ordinal()][step.bin()]);
        }
    }
}
