package io.stoke.loader.work;

import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import java.util.ArrayList;
import java.util.List;

/**
 * Whether anything in the epoch being published decoded. An epoch in which nothing did means every
 * file is bad, and every later epoch would be the same: the pipeline stops there rather than
 * publishing empty batches forever. Counted in batch order by one thread at a time: the publisher,
 * under its lock, or the GPU decode stage's decode thread (io.stoke.gpu), as it hands batches out.
 */
public final class EpochDecodeCount {
    private long decoded;
    private long failed;
    private final List<SampleError> kept = new ArrayList<>();

    /**
     * Counts one batch of {@code size} samples of which {@code errors} failed.
     *
     * @return at an epoch's last batch, the exception to stop with when not one of the epoch's
     *     samples decoded; otherwise null
     */
    public NoSampleDecodedException count(long epoch, int size, List<SampleError> errors, boolean lastInEpoch) {
        decoded += size - errors.size();
        failed += errors.size();
        for (int i = 0; i < errors.size() && kept.size() < NoSampleDecodedException.KEPT; i++) {
            kept.add(errors.get(i));
        }
        if (!lastInEpoch) {
            return null;
        }
        NoSampleDecodedException none = decoded == 0 ? new NoSampleDecodedException(epoch, failed, kept) : null;
        decoded = 0;
        failed = 0;
        kept.clear();
        return none;
    }
}
