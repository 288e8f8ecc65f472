package io.stoke.loader;

/**
 * What one batch cost.
 *
 * @param waitNanos   how long the consumer waited in {@link Loader#next()} for it
 * @param decodeNanos worker time spent on its samples (read, decode, resize, crop), summed
 * @param sourceBytes compressed bytes read for it
 * @param pixelBytes  bytes of output it holds
 */
public record BatchStats(long waitNanos, long decodeNanos, long sourceBytes, long pixelBytes) {}
