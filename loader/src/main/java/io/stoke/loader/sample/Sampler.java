package io.stoke.loader.sample;

import java.util.SplittableRandom;

/**
 * The order of one rank's samples in each epoch, as a pure function of (seed, epoch, rank,
 * worldSize): batch {@code k} of epoch {@code e} is positions {@code [k*B, k*B+B)} of
 * {@link #order}.
 *
 * <p>Every rank draws the same permutation of the whole dataset, then takes every
 * {@code worldSize}-th element starting at {@code rank}, so shards are disjoint, their sizes
 * differ by at most one, and together they cover each sample exactly once per epoch (no padding,
 * unlike PyTorch's DistributedSampler). With {@code dropLast} the trailing partial batch of each
 * shard is not delivered.
 */
public final class Sampler {
    private final int datasetSize;
    private final boolean shuffle;
    private final long seed;
    private final boolean dropLast;
    private final int batchSize;
    private final int rank;
    private final int worldSize;

    public Sampler(int datasetSize, int batchSize, boolean shuffle, long seed, boolean dropLast, int rank, int worldSize) {
        if (datasetSize < 1) {
            throw new IllegalArgumentException("empty dataset");
        }
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize must be positive: " + batchSize);
        }
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is not in [0, worldSize=" + worldSize + ")");
        }
        this.datasetSize = datasetSize;
        this.batchSize = batchSize;
        this.shuffle = shuffle;
        this.seed = seed;
        this.dropLast = dropLast;
        this.rank = rank;
        this.worldSize = worldSize;
        if (samplesPerEpoch() == 0) {
            throw new IllegalArgumentException("rank " + rank + " of " + worldSize + " gets " + shardSize()
                    + " samples, fewer than one batch of " + batchSize + " with dropLast");
        }
    }

    /** Samples in this rank's shard. */
    public int shardSize() {
        return (datasetSize - rank + worldSize - 1) / worldSize;
    }

    /** Samples delivered per epoch: the shard, less a partial last batch under {@code dropLast}. */
    public int samplesPerEpoch() {
        int shard = shardSize();
        return dropLast ? shard - shard % batchSize : shard;
    }

    public int batchesPerEpoch() {
        return (samplesPerEpoch() + batchSize - 1) / batchSize;
    }

    public int batchSize() {
        return batchSize;
    }

    /** The size of batch {@code k} of an epoch: {@code B}, except possibly the last. */
    public int batchSize(int k) {
        return Math.min(batchSize, samplesPerEpoch() - k * batchSize);
    }

    /**
     * Fills {@code out[0, samplesPerEpoch())} with this rank's dataset indices for {@code epoch}.
     * {@code scratch} must hold {@code datasetSize} ints (the whole permutation).
     */
    public void order(long epoch, int[] scratch, int[] out) {
        if (scratch.length < datasetSize || out.length < samplesPerEpoch()) {
            throw new IllegalArgumentException("arrays too small");
        }
        for (int i = 0; i < datasetSize; i++) {
            scratch[i] = i;
        }
        if (shuffle) {
            SplittableRandom random = new SplittableRandom(mix(seed, epoch));
            for (int i = datasetSize - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                int t = scratch[i];
                scratch[i] = scratch[j];
                scratch[j] = t;
            }
        }
        int n = samplesPerEpoch();
        for (int i = 0; i < n; i++) {
            out[i] = scratch[rank + i * worldSize];
        }
    }

    /** Convenience: a fresh array holding {@link #order(long, int[], int[])}. */
    public int[] order(long epoch) {
        int[] out = new int[samplesPerEpoch()];
        order(epoch, new int[datasetSize], out);
        return out;
    }

    /** The seed of the order and of the training transform's random crops. */
    public long seed() {
        return seed;
    }

    public int datasetSize() {
        return datasetSize;
    }

    private static long mix(long seed, long epoch) {
        long z = seed * 0x9E3779B97F4A7C15L + epoch * 0xBF58476D1CE4E5B9L + 0x94D049BB133111EBL;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
