package io.stoke.loader.error;

import java.util.List;

/** A batch held samples that could not be decoded, under {@link ErrorPolicy#FAIL}. The loader goes on. */
public final class SampleException extends RuntimeException {
    private final transient List<SampleError> errors;
    private final long epoch;
    private final long batchIndex;

    public SampleException(long epoch, long batchIndex, List<SampleError> errors) {
        super("batch " + batchIndex + " of epoch " + epoch + ": " + errors.size() + " sample(s) failed: "
                + String.join("; ", errors.stream().map(SampleError::toString).toList()));
        this.errors = List.copyOf(errors);
        this.epoch = epoch;
        this.batchIndex = batchIndex;
    }

    public List<SampleError> errors() {
        return errors;
    }

    public long epoch() {
        return epoch;
    }

    public long batchIndex() {
        return batchIndex;
    }
}
