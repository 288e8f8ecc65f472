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
 *
 * <p>Over remote tar shards a global shuffle would read every shard at once; with a shard window
 * ({@link #withShardWindow}) the permutation is instead: the shards in a shuffled order, cut into
 * windows of {@code W} consecutive shards, each window's samples shuffled among themselves, the
 * windows one after the other. Every sample is still drawn once per epoch, and the order is still
 * a pure function of (seed, epoch); but two samples can only be neighbours if their shards fall in
 * the same window, so a batch mixes at most {@code W} shards (from a window of 1 it is one shard's
 * run of samples, in a random order).
 */
public final class Sampler {
    private final int datasetSize;
    private final boolean shuffle;
    private final long seed;
    private final boolean dropLast;
    private final int batchSize;
    private final int rank;
    private final int worldSize;
    private final int[] shardFirst; // null, or the first sample of each shard and then the size
    private final int window;

    public Sampler(int datasetSize, int batchSize, boolean shuffle, long seed, boolean dropLast, int rank, int worldSize) {
        this(datasetSize, batchSize, shuffle, seed, dropLast, rank, worldSize, null, 0);
    }

    /**
     * This sampler with its shuffle limited to windows of {@code window} shards, whose samples are
     * {@code [shardFirst[s], shardFirst[s+1])}; a window of 0, or of every shard, is the global shuffle.
     */
    public Sampler withShardWindow(int[] shardFirst, int window) {
        if (window < 0) {
            throw new IllegalArgumentException("shuffle window must not be negative: " + window);
        }
        if (shardFirst.length < 2 || shardFirst[0] != 0 || shardFirst[shardFirst.length - 1] != datasetSize) {
            throw new IllegalArgumentException("shard bounds do not cover the " + datasetSize + " samples");
        }
        boolean global = window == 0 || window >= shardFirst.length - 1;
        return new Sampler(datasetSize, batchSize, shuffle, seed, dropLast, rank, worldSize,
                global ? null : shardFirst.clone(), global ? 0 : window);
    }

    private Sampler(int datasetSize, int batchSize, boolean shuffle, long seed, boolean dropLast, int rank, int worldSize, int[] shardFirst,
                    int window) {
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
        this.shardFirst = shardFirst;
        this.window = window;
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
        if (shuffle && shardFirst != null) {
            windowed(new SplittableRandom(mix(seed, epoch)), scratch);
        } else {
            for (int i = 0; i < datasetSize; i++) {
                scratch[i] = i;
            }
            if (shuffle) {
                shuffle(new SplittableRandom(mix(seed, epoch)), scratch, 0, datasetSize);
            }
        }
        int n = samplesPerEpoch();
        for (int i = 0; i < n; i++) {
            out[i] = scratch[rank + i * worldSize];
        }
    }

    /** Shards in a random order; each window of them a run of its samples, shuffled. */
    private void windowed(SplittableRandom random, int[] out) {
        int shards = shardFirst.length - 1;
        int[] shardOrder = new int[shards];
        for (int s = 0; s < shards; s++) {
            shardOrder[s] = s;
        }
        shuffle(random, shardOrder, 0, shards);
        int n = 0;
        for (int w = 0; w < shards; w += window) {
            int start = n;
            for (int s = w; s < Math.min(shards, w + window); s++) {
                int shard = shardOrder[s];
                for (int i = shardFirst[shard]; i < shardFirst[shard + 1]; i++) {
                    out[n++] = i;
                }
            }
            shuffle(random, out, start, n);
        }
    }

    /** Fisher-Yates over {@code a[from, to)}. */
    private static void shuffle(SplittableRandom random, int[] a, int from, int to) {
        for (int i = to - 1; i > from; i--) {
            int j = from + random.nextInt(i - from + 1);
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }

    /** Shards per shuffle window; 0 when the shuffle is global. */
    public int shardWindow() {
        return window;
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
