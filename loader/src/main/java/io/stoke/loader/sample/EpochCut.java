package io.stoke.loader.sample;

import java.util.Arrays;

/**
 * What the ranks of one world took of an epoch before it was resumed on another: over the
 * samples of the epoch still to come when that world started it (its remainder, in order), split
 * over {@code worldSize} ranks as {@link Sampler} splits an epoch, rank {@code r} took the first
 * {@code taken[r]} positions of its share.
 *
 * <p>Which samples were taken depends on these counts alone, not on the batch size, the shard
 * tail or {@code dropLast} of that world: rank {@code r}'s position {@code j} is the remainder's
 * element {@code r + j * worldSize}, and a position past the remainder's end was padding, which
 * took nothing new.
 *
 * @param worldSize the ranks of that world
 * @param taken     samples each rank took, padding included, indexed by rank
 */
public record EpochCut(int worldSize, int[] taken) {
    public EpochCut {
        if (worldSize < 1 || taken == null || taken.length != worldSize) {
            throw new IllegalArgumentException("an epoch cut needs one count per rank of its world of " + worldSize
                    + ", not " + (taken == null ? "none" : taken.length));
        }
        taken = taken.clone();
        for (int r = 0; r < worldSize; r++) {
            if (taken[r] < 0) {
                throw new IllegalArgumentException("rank " + r + " took a negative count of samples: " + taken[r]);
            }
        }
    }

    /** The cut of a world whose every rank took {@code samples} positions (a synchronised checkpoint). */
    public static EpochCut uniform(int worldSize, int samples) {
        int[] taken = new int[Math.max(0, worldSize)];
        Arrays.fill(taken, samples);
        return new EpochCut(worldSize, taken);
    }

    /** Samples rank {@code rank} took. */
    public int taken(int rank) {
        return taken[rank];
    }

    @Override
    public int[] taken() {
        return taken.clone();
    }

    /** Whether every rank took as many samples. */
    public boolean isUniform() {
        for (int t : taken) {
            if (t != taken[0]) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EpochCut c && c.worldSize == worldSize && Arrays.equals(c.taken, taken);
    }

    @Override
    public int hashCode() {
        return 31 * worldSize + Arrays.hashCode(taken);
    }

    @Override
    public String toString() {
        return "EpochCut[worldSize=" + worldSize + ", taken=" + Arrays.toString(taken) + "]";
    }
}
