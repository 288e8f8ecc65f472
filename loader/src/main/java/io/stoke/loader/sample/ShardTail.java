package io.stoke.loader.sample;

/**
 * What a rank does with the end of an epoch's permutation when the dataset does not split evenly
 * over the ranks (PyTorch's {@code DistributedSampler(drop_last=...)}); with one rank, nothing.
 */
public enum ShardTail {
    /**
     * Every rank gets {@code ceil(N/W)} samples: the permutation is padded by repeating it from its
     * start, so the last rank(s) get up to one sample that another rank also gets, the padding
     * ({@link Sampler#isPadding}). PyTorch's {@code drop_last=False}, the default.
     */
    PAD,
    /** Every rank gets {@code floor(N/W)} samples: up to {@code W-1} samples of each epoch are left out. */
    DROP
}
