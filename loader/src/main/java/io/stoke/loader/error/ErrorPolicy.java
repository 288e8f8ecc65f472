package io.stoke.loader.error;

/** What the loader does with a sample it cannot decode. */
public enum ErrorPolicy {
    /** The batch holding the sample is not delivered: {@link Loader#next()} throws {@link SampleException}. */
    FAIL,
    /** The sample's pixels are zeroed, its status says why, and the batch lists it in {@link Batch#skipped()}. */
    SKIP
}
