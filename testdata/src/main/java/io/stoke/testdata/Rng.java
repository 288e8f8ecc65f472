package io.stoke.testdata;

/**
 * A small, fast, seedable generator (xorshift64* seeded through SplitMix64). Not
 * {@link java.util.SplittableRandom} because the dataset's bytes must never depend on a JDK
 * implementation detail: the same seed has to give the same files on every JDK, forever.
 */
final class Rng {
    private long state;

    Rng(long seed) {
        state = mix(seed);
        if (state == 0) {
            state = 0x9E3779B97F4A7C15L;
        }
    }

    /** SplitMix64's finaliser: a bijective scramble, so distinct inputs stay distinct. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Derives an independent stream's seed from a parent seed and a number of the stream. */
    static long derive(long seed, long stream, long purpose) {
        return mix(mix(seed + 0x9E3779B97F4A7C15L * (stream + 1)) ^ (purpose * 0xD1B54A32D192ED03L));
    }

    long nextLong() {
        long x = state;
        x ^= x >>> 12;
        x ^= x << 25;
        x ^= x >>> 27;
        state = x;
        return x * 0x2545F4914F6CDD1DL;
    }

    /** Uniform in [0, 1). */
    double nextDouble() {
        return (nextLong() >>> 11) * 0x1.0p-53;
    }

    /** Uniform in [lo, hi). */
    double range(double lo, double hi) {
        return lo + (hi - lo) * nextDouble();
    }

    /** Uniform in [0, bound). */
    int nextInt(int bound) {
        return (int) ((nextLong() >>> 33) * bound >>> 31);
    }

    boolean chance(double p) {
        return nextDouble() < p;
    }

    /** Uniform in [-1, 1): the building block of every noise field. */
    float signed() {
        return (nextLong() >>> 40) * 0x1.0p-23f - 1f;
    }
}
