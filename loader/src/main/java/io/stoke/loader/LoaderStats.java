package io.stoke.loader;

import io.stoke.loader.cache.RestartCache;
import java.util.Arrays;

/**
 * Totals since the loader started.
 *
 * @param batches             batches handed to the consumer
 * @param images              samples in them
 * @param skipped             samples that were skipped (policy SKIP) or failed (policy FAIL)
 * @param sourceBytes         compressed bytes read
 * @param elapsedNanos        since the workers started
 * @param timeToFirstBatchNanos from start until the first batch was handed out (-1 if none yet)
 * @param waitNanos           per batch, how long the consumer waited for it, in delivery order
 * @param restartCache        the restart cache's counts in this process ({@link RestartCache#stats()}),
 *     or null without one; per epoch: {@link Loader#restartCacheEpochs()}
 */
public record LoaderStats(
        long batches,
        long images,
        long skipped,
        long sourceBytes,
        long elapsedNanos,
        long timeToFirstBatchNanos,
        long[] waitNanos,
        RestartCache.Stats restartCache) {
    public double imagesPerSecond() {
        return elapsedNanos == 0 ? 0 : images * 1e9 / elapsedNanos;
    }

    public double megabytesPerSecond() {
        return elapsedNanos == 0 ? 0 : sourceBytes / 1e6 * 1e9 / elapsedNanos;
    }

    /** The {@code q}-quantile (0..1, nearest rank) of the consumer's wait per batch, in nanoseconds. */
    public long waitQuantileNanos(double q) {
        if (waitNanos.length == 0) {
            return 0;
        }
        long[] sorted = waitNanos.clone();
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank))];
    }
}
