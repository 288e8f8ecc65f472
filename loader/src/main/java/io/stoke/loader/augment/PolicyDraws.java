package io.stoke.loader.augment;

import java.util.List;
import java.util.random.RandomGenerator;

/**
 * A policy's draws for images of one size: its magnitude tables, computed once, and
 * {@link #draw}, which picks an image's ops from the sample's random stream as torchvision's
 * {@code forward} does. TrivialAugmentWide: an op uniformly, a bin uniformly where the op has a
 * magnitude, then a sign where it is signed. RandAugment: {@code num_ops} times an op uniformly,
 * at the fixed bin, then a sign. AutoAugment: a sub-policy uniformly, two uniforms and two signs,
 * each step applied when its uniform is at most its probability. The same distribution as
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
        for (AugmentOp op : ops) {
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
