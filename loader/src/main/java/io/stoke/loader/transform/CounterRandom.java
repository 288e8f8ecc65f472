package io.stoke.loader.transform;

import java.util.random.RandomGenerator;

/**
 * The random numbers of one sample's transform, as a pure function of (seed, epoch, dataset
 * index): {@link #reset} keys the stream, and the draws that follow depend on nothing else, so
 * a sample gets the same crop and flip whichever worker decodes it, whenever, and in a resumed
 * run. SplitMix64 (Steele, Lea and Flood): a 64-bit counter advanced by the golden-ratio
 * increment and a finaliser that mixes it, simple enough to be written again in C or Python.
 *
 * <p>One per worker; no allocation. A {@link RandomGenerator}, so that the augmentation policies
 * draw from the same stream; its own {@link #nextInt(int)} and {@link #nextDouble()} are the draws.
 */
public final class CounterRandom implements RandomGenerator {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private long state;

    /** A generator to be {@link #reset}, before its first draw; one per worker, reused for every sample. */
    public CounterRandom() {}

    /** Keys the stream to one sample of one epoch; the draws after it are that sample's. */
    public void reset(long seed, long epoch, long index) {
        // Each key is mixed before it is combined, so neighbouring (epoch, index) pairs start far apart.
        state = mix(mix(mix(seed) + epoch) + index);
    }

    /** The next 64 random bits. */
    @Override
    public long nextLong() {
        state += GOLDEN;
        return mix(state);
    }

    /** Uniform in [0, 1), with 53 random bits. */
    @Override
    public double nextDouble() {
        return (nextLong() >>> 11) * 0x1.0p-53;
    }

    /** Uniform in [lo, hi). */
    public double uniform(double lo, double hi) {
        return lo + (hi - lo) * nextDouble();
    }

    /** Uniform in [0, bound), without modulo bias (Lemire's multiply-and-reject). */
    @Override
    public int nextInt(int bound) {
        if (bound <= 0) {
            throw new IllegalArgumentException("bound must be positive: " + bound);
        }
        long m = (nextLong() >>> 32) * bound;
        long low = m & 0xFFFFFFFFL;
        if (low < bound) {
            long threshold = (0x1_0000_0000L - bound) % bound;
            while (low < threshold) {
                m = (nextLong() >>> 32) * bound;
                low = m & 0xFFFFFFFFL;
            }
        }
        return (int) (m >>> 32);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
