package io.stoke.loader.sample;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The order of one rank's samples in each epoch, as a pure function of (seed, epoch, rank,
 * worldSize): batch {@code k} of epoch {@code e} is positions {@code [k*B, k*B+B)} of
 * {@link #order}.
 *
 * <p>Every rank draws the same permutation {@code P} of the whole dataset ({@code N} samples),
 * then takes every {@code worldSize}-th element starting at {@code rank}, as PyTorch's
 * {@code DistributedSampler} does, so that every rank gets the same number of samples (ranks
 * under DistributedDataParallel must take the same number of steps): each rank's share is its
 * partition. With the partition tail {@link PartitionTail#PAD} (the default) each rank gets {@code ceil(N/W)} samples: {@code P} is
 * padded by repeating it from its start ({@code Q[i] = P[i mod N]}) and rank {@code r} takes
 * {@code Q[r + j*W]}; the positions with {@code r + j*W >= N}, always a suffix of the rank's
 * epoch, are padding ({@link #isPadding}): samples another rank also gets. With
 * {@link PartitionTail#DROP} each rank gets {@code floor(N/W)} samples, {@code P[r + j*W]}, and up to
 * {@code W-1} samples are left out of the epoch. With one rank both are the permutation itself.
 * With {@code dropLast} the trailing partial batch of each rank's epoch is not delivered (PyTorch
 * DataLoader's {@code drop_last}).
 *
 * <p>Over remote tar shards a global shuffle would read every shard at once; with a shard window
 * ({@link #withShardWindow}) the permutation is instead: the shards in a shuffled order, cut into
 * windows of {@code W} consecutive shards, each window's samples shuffled among themselves, the
 * windows one after the other. Every sample is still drawn once per epoch, and the order is still
 * a pure function of (seed, epoch); but two samples can only be neighbours if their shards fall in
 * the same window, so a batch mixes at most {@code W} shards (from a window of 1 it is one shard's
 * run of samples, in a random order).
 *
 * <p>An epoch resumed on another world ({@link #resuming}) is its remainder: the positions of its
 * permutation that the ranks of earlier worlds had not taken ({@link EpochCut}), in order, split
 * over this world's ranks exactly as a whole epoch is, its padding repeating the remainder from its
 * start. Only that one epoch differs; the shape methods that take an epoch say which it is.
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
    private final PartitionTail tail;
    // The resumed epoch (-1: none), its cuts, and the positions of its permutation still to come.
    private final long resumedEpoch;
    private final List<EpochCut> cuts;
    private final int[] remainder;

    /** A sampler with the partition tail {@link PartitionTail#PAD}. */
    public Sampler(
            int datasetSize, int batchSize, boolean shuffle, long seed, boolean dropLast, int rank, int worldSize) {
        this(datasetSize, batchSize, shuffle, seed, dropLast, rank, worldSize, PartitionTail.PAD);
    }

    public Sampler(
            int datasetSize,
            int batchSize,
            boolean shuffle,
            long seed,
            boolean dropLast,
            int rank,
            int worldSize,
            PartitionTail tail) {
        this(datasetSize, batchSize, shuffle, seed, dropLast, rank, worldSize, null, 0, tail, -1, List.of(), null);
    }

    /**
     * The sampler with {@code tail} under its new name.
     *
     * @deprecated "shard" means a tar shard only; use the constructor that takes a {@link PartitionTail}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public Sampler(
            int datasetSize,
            int batchSize,
            boolean shuffle,
            long seed,
            boolean dropLast,
            int rank,
            int worldSize,
            ShardTail tail) {
        this(datasetSize, batchSize, shuffle, seed, dropLast, rank, worldSize, tail.partitionTail());
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
        return with(global ? null : shardFirst.clone(), global ? 0 : window, resumedEpoch, cuts, remainder);
    }

    /** This sampler's world and settings with another shard window and resumed epoch. */
    private Sampler with(int[] shardFirst, int window, long resumedEpoch, List<EpochCut> cuts, int[] remainder) {
        return new Sampler(
                datasetSize,
                batchSize,
                shuffle,
                seed,
                dropLast,
                rank,
                worldSize,
                shardFirst,
                window,
                tail,
                resumedEpoch,
                cuts,
                remainder);
    }

    /**
     * This sampler with epoch {@code epoch} resumed after {@code cuts} (oldest first): that epoch
     * delivers only the positions of its permutation the cuts left, split over this sampler's
     * world; every other epoch is whole. No cuts: this sampler.
     *
     * @throws IllegalArgumentException a cut says a rank took more than its share of what was left
     */
    public Sampler resuming(long epoch, List<EpochCut> cuts) {
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch must not be negative: " + epoch);
        }
        if (cuts.isEmpty()) {
            return this;
        }
        return with(shardFirst, window, epoch, List.copyOf(cuts), remaining(datasetSize, cuts));
    }

    /**
     * The positions of an epoch's permutation of {@code n} samples that {@code cuts} (oldest first)
     * left, in order: after each cut, those of the previous remainder that no rank of its world took.
     */
    public static int[] remaining(int n, List<EpochCut> cuts) {
        int[] rest = new int[n];
        for (int i = 0; i < n; i++) {
            rest[i] = i;
        }
        int m = n;
        for (EpochCut cut : cuts) {
            int w = cut.worldSize();
            long share = ((long) m + w - 1) / w; // no rank's share of m positions over w ranks is larger
            boolean[] took = new boolean[m];
            for (int r = 0; r < w; r++) {
                int t = cut.taken(r);
                if (t > share) {
                    throw new IllegalArgumentException("rank " + r + " of a world of " + w + " is said to have taken "
                            + t + " samples of an epoch with " + m + " left, more than its share of " + share);
                }
                // Rank r's position j is element r + j*w of the remainder; past its end, padding.
                for (long i = r, j = 0; j < t && i < m; j++, i += w) {
                    took[(int) i] = true;
                }
            }
            int kept = 0;
            for (int i = 0; i < m; i++) {
                if (!took[i]) {
                    rest[kept++] = rest[i];
                }
            }
            m = kept;
        }
        return Arrays.copyOf(rest, m);
    }

    /** The epoch resumed after {@link #cuts()}, or -1 when every epoch is whole. */
    public long resumedEpoch() {
        return resumedEpoch;
    }

    /** What earlier worlds took of {@link #resumedEpoch()}, oldest first; empty when none. */
    public List<EpochCut> cuts() {
        return cuts;
    }

    /** Samples of epoch {@code epoch} still to be delivered over all ranks: {@code N}, or its remainder's. */
    public int epochLength(long epoch) {
        return isResumed(epoch) ? remainder.length : datasetSize;
    }

    private boolean isResumed(long epoch) {
        return resumedEpoch >= 0 && epoch == resumedEpoch;
    }

    private Sampler(
            int datasetSize,
            int batchSize,
            boolean shuffle,
            long seed,
            boolean dropLast,
            int rank,
            int worldSize,
            int[] shardFirst,
            int window,
            PartitionTail tail,
            long resumedEpoch,
            List<EpochCut> cuts,
            int[] remainder) {
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
        if (tail == null) {
            throw new IllegalArgumentException("partition tail must be PAD or DROP, not null");
        }
        this.tail = tail;
        this.resumedEpoch = resumedEpoch;
        this.cuts = cuts;
        this.remainder = remainder;
        if (tail == PartitionTail.DROP && datasetSize / worldSize == 0) {
            throw new IllegalArgumentException("with partition tail DROP each of " + worldSize + " ranks gets floor("
                    + datasetSize + "/" + worldSize + ") = 0 samples: use fewer ranks than " + worldSize
                    + ", a larger dataset, or partition tail PAD");
        }
        if (samplesPerEpoch() == 0) {
            throw new IllegalArgumentException("rank " + rank + " of " + worldSize + " gets " + partitionSize()
                    + " samples, fewer than one batch of " + batchSize + " with dropLast");
        }
    }

    /** Samples in this rank's epoch, padding included: {@code ceil(N/W)} (PAD) or {@code floor(N/W)} (DROP), the same on every rank. */
    public int partitionSize() {
        return partitionSize(datasetSize);
    }

    /**
     * {@link #partitionSize()}.
     *
     * @deprecated "shard" means a tar shard only; use {@link #partitionSize()}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public int shardSize() {
        return partitionSize();
    }

    private int partitionSize(int n) {
        return tail == PartitionTail.PAD ? (n + worldSize - 1) / worldSize : n / worldSize;
    }

    /** How this sampler treats a dataset that does not split evenly over the ranks. */
    public PartitionTail partitionTail() {
        return tail;
    }

    /**
     * {@link #partitionTail()} under its old name.
     *
     * @deprecated "shard" means a tar shard only; use {@link #partitionTail()}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public ShardTail shardTail() {
        return ShardTail.valueOf(tail.name());
    }

    /** Positions of this rank's epoch that are not padding: the first ones, {@code [0, unpaddedSamples())}. */
    public int unpaddedSamples() {
        return unpaddedSamples(-1);
    }

    /** {@link #unpaddedSamples()} of epoch {@code epoch}, which may be a resumed one. */
    public int unpaddedSamples(long epoch) {
        int n = epochLength(epoch);
        return Math.max(0, Math.min(samplesPerEpoch(epoch), (n - rank + worldSize - 1) / worldSize));
    }

    /**
     * Whether position {@code position} of this rank's epoch (batch {@code k}'s sample {@code i} is
     * position {@code k*B + i}) is padding: a sample repeated from the start of the permutation
     * so that every rank gets as many samples, which another rank also gets this epoch. Always a
     * suffix of the epoch, and only with {@link PartitionTail#PAD}; count each sample once in evaluation
     * by leaving these out.
     */
    public boolean isPadding(int position) {
        return position >= unpaddedSamples();
    }

    /** How many samples of batch {@code k} are padding: always its last ones. */
    public int paddedIn(int k) {
        return paddedIn(-1, k);
    }

    /** {@link #paddedIn(int)} in epoch {@code epoch}, which may be a resumed one. */
    public int paddedIn(long epoch, int k) {
        int start = k * batchSize;
        int end = start + batchSize(epoch, k);
        return Math.max(0, end - Math.max(start, unpaddedSamples(epoch)));
    }

    /** Samples delivered per epoch: the partition, less a partial last batch under {@code dropLast}. */
    public int samplesPerEpoch() {
        return samplesPerEpoch(-1);
    }

    /** Samples this rank delivers in epoch {@code epoch}: as {@link #samplesPerEpoch()}, of the remainder when it is the resumed one (possibly none). */
    public int samplesPerEpoch(long epoch) {
        int partition = partitionSize(epochLength(epoch));
        return dropLast ? partition - partition % batchSize : partition;
    }

    public int batchesPerEpoch() {
        return batchesPerEpoch(-1);
    }

    /** Batches in epoch {@code epoch}, the same on every rank: as {@link #batchesPerEpoch()}, fewer in a resumed one. */
    public int batchesPerEpoch(long epoch) {
        return (samplesPerEpoch(epoch) + batchSize - 1) / batchSize;
    }

    public int batchSize() {
        return batchSize;
    }

    /** The size of batch {@code k} of an epoch: {@code B}, except possibly the last. */
    public int batchSize(int k) {
        return batchSize(-1, k);
    }

    /** The size of batch {@code k} of epoch {@code epoch}, which may be a resumed one. */
    public int batchSize(long epoch, int k) {
        return Math.min(batchSize, samplesPerEpoch(epoch) - k * batchSize);
    }

    /**
     * Fills {@code out[0, samplesPerEpoch())} with this rank's dataset indices for {@code epoch}.
     * {@code scratch} must hold {@code datasetSize} ints (the whole permutation).
     */
    public void order(long epoch, int[] scratch, int[] out) {
        if (scratch.length < datasetSize || out.length < samplesPerEpoch(epoch)) {
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
        int n = samplesPerEpoch(epoch);
        if (isResumed(epoch)) {
            // The remainder R split as a whole epoch is: Q[i] = P[R[i mod |R|]].
            for (int i = 0; i < n; i++) {
                out[i] = scratch[remainder[(int) ((rank + (long) i * worldSize) % remainder.length)]];
            }
            return;
        }
        for (int i = 0; i < n; i++) {
            // Q[i] = P[i mod N]: the padding repeats the permutation from its start (PAD only).
            out[i] = scratch[(int) ((rank + (long) i * worldSize) % datasetSize)];
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
        int[] out = new int[samplesPerEpoch(epoch)];
        order(epoch, new int[datasetSize], out);
        return out;
    }

    /** Whether each epoch is a permutation (else dataset order). */
    public boolean shuffled() {
        return shuffle;
    }

    /** Whether each epoch's last partial batch of this rank is left out. */
    public boolean dropLast() {
        return dropLast;
    }

    public int rank() {
        return rank;
    }

    public int worldSize() {
        return worldSize;
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

    /**
     * What a rank does with the end of an epoch's permutation when the dataset does not split evenly
     * over the ranks (PyTorch's {@code DistributedSampler(drop_last=...)}); with one rank, nothing.
     */
    public enum PartitionTail {
        /**
         * Every rank gets {@code ceil(N/W)} samples: the permutation is padded by repeating it from its
         * start, so the last rank(s) get up to one sample that another rank also gets, the padding
         * ({@link Sampler#isPadding}). PyTorch's {@code drop_last=False}, the default.
         */
        PAD,
        /** Every rank gets {@code floor(N/W)} samples: up to {@code W-1} samples of each epoch are left out. */
        DROP
    }

    /**
     * {@link PartitionTail} under its old name (an enum cannot alias another: the same constants,
     * mapped by {@link #partitionTail()}).
     *
     * @deprecated "shard" means a tar shard only; use {@link PartitionTail}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public enum ShardTail {
        /** {@link PartitionTail#PAD}. */
        PAD,
        /** {@link PartitionTail#DROP}. */
        DROP;

        /** This tail under its new name. */
        public PartitionTail partitionTail() {
            return PartitionTail.valueOf(name());
        }
    }
}
