package io.stoke.loader.error;

import java.util.List;

/**
 * A whole epoch went by without one sample decoding: every file of the dataset (or of this rank's
 * shard) is unreadable, so every later epoch would fail the same way. The loader stops rather than
 * spin over the same bad files forever, under either {@link ErrorPolicy}: under {@code SKIP} it
 * would otherwise deliver only zeros, under {@code FAIL} only exceptions.
 *
 * <p>It is thrown by {@link Loader#next()} once the consumer has taken every batch of that epoch
 * (each of which named its files as usual), and is what {@link Loader#failure()} reports, so a
 * producer without an in-process consumer ({@code stoke serve}) ends on it too.
 */
public final class NoSampleDecodedException extends RuntimeException {
    /** How many of the epoch's errors the message and {@link #errors()} keep; the count is exact. */
    public static final int KEPT = 100;

    private final transient List<SampleError> errors;
    private final long epoch;
    private final long failed;

    /**
     * @param epoch  the epoch that decoded nothing
     * @param failed how many samples it held (all of them failed)
     * @param errors the first of its errors, at most {@link #KEPT}, in delivery order
     */
    public NoSampleDecodedException(long epoch, long failed, List<SampleError> errors) {
        super(message(epoch, failed, errors));
        this.errors = List.copyOf(errors);
        this.epoch = epoch;
        this.failed = failed;
    }

    private static String message(long epoch, long failed, List<SampleError> errors) {
        StringBuilder sb = new StringBuilder();
        sb.append("no sample decoded in epoch ")
                .append(epoch)
                .append(": all ")
                .append(failed)
                .append(failed == 1 ? " sample" : " samples")
                .append(" failed, so every epoch would; stopping. Files and reasons:");
        for (SampleError e : errors) {
            sb.append("\n  ").append(e);
        }
        if (failed > errors.size()) {
            sb.append("\n  ... and ").append(failed - errors.size()).append(" more");
        }
        return sb.toString();
    }

    /** The first errors of the epoch (at most {@link #KEPT}). */
    public List<SampleError> errors() {
        return errors;
    }

    public long epoch() {
        return epoch;
    }

    /** Samples in the epoch, every one of which failed. */
    public long failed() {
        return failed;
    }
}
