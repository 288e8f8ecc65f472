package io.stoke.loader.augment;

/**
 * What AugMix drew for one image: the weight of the original ({@code m[0]}), each chain's weight
 * ({@code dirichlet(alpha * width)[i] * m[1]}, float32 as torch multiplies them), each chain's
 * depth, and its ops end to end (op, magnitude bin, sign, and torchvision's {@code magnitude}).
 * One per worker, refilled for every image.
 */
public final class AugMixDrawn {
    float original;
    float beta;
    final float[] mixing;
    final float[] weights;
    final int[] depths;
    final AugmentOp[] ops;
    final int[] bins;
    final boolean[] negative;
    final double[] magnitudes;
    int count;

    AugMixDrawn(int chains, int maxDepth) {
        mixing = new float[chains];
        weights = new float[chains];
        depths = new int[chains];
        ops = new AugmentOp[chains * maxDepth];
        bins = new int[ops.length];
        negative = new boolean[ops.length];
        magnitudes = new double[ops.length];
    }

    /** How many chains. */
    public int chains() {
        return weights.length;
    }

    /** {@code m[0]}: the original image's weight. */
    public float original() {
        return original;
    }

    /** {@code m[1]}, the augmented images' share. */
    public float beta() {
        return beta;
    }

    /** The chain weights as drawn, before torchvision multiplies them by {@code m[1]}. */
    public float mixing(int chain) {
        return mixing[chain];
    }

    /** Chain {@code chain}'s weight in the mix: {@code mixing(chain) * beta()} in float32. */
    public float weight(int chain) {
        return weights[chain];
    }

    public int depth(int chain) {
        return depths[chain];
    }

    /** How many ops in all chains together. */
    public int count() {
        return count;
    }

    /** The {@code i}th op, chains end to end. */
    public AugmentOp op(int i) {
        return ops[i];
    }

    /** The magnitude bin (0 to severity - 1), or -1 for an op without one. */
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
