package io.stoke.loader.augment;

/**
 * The ops one image gets, as a policy drew them: for each, the op, its magnitude bin (-1 for an op
 * without one) and whether its magnitude was negated; {@link #magnitude} is torchvision's
 * {@code magnitude} argument to {@code _apply_op}. One per worker, refilled for every image.
 */
public final class Drawn {
    final AugmentOp[] ops;
    final int[] bins;
    final boolean[] negative;
    final double[] magnitudes;
    /** ColorJitter's scratch: the order of its four ops, and their factors (NaN where off). */
    final int[] order = new int[4];

    final double[] factors = new double[4];
    int count;

    Drawn(int capacity) {
        ops = new AugmentOp[capacity];
        bins = new int[capacity];
        negative = new boolean[capacity];
        magnitudes = new double[capacity];
    }

    void add(AugmentOp op, int bin, boolean negate, double magnitude) {
        ops[count] = op;
        bins[count] = bin;
        negative[count] = negate;
        magnitudes[count] = negate ? -magnitude : magnitude;
        count++;
    }

    /** How many ops were drawn (none where AutoAugment's probabilities said no). */
    public int count() {
        return count;
    }

    public AugmentOp op(int i) {
        return ops[i];
    }

    /** The magnitude bin, or -1. */
    public int bin(int i) {
        return bins[i];
    }

    public boolean negative(int i) {
        return negative[i];
    }

    /** torchvision's {@code magnitude}: the table's float32 value as a double, negated when drawn so. */
    public double magnitude(int i) {
        return magnitudes[i];
    }
}
