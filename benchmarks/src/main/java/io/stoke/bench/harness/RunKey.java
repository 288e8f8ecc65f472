package io.stoke.bench.harness;

import java.util.Locale;

/**
 * One point of the sweep: which loader, on which dataset, with which settings, from which start.
 *
 * @param loader    {@code stoke} or {@code pytorch}
 * @param dataset   {@code jpeg} or {@code raw} (preprocessed 224x224x3 uint8 tensors on disk)
 * @param batchSize samples per batch
 * @param workers   Stoke's decoding threads, or PyTorch's worker processes
 * @param modelMs   simulated model time per batch, slept by the consumer after each batch
 * @param start     {@link #COLD} or {@link #WARM}
 */
public record RunKey(String loader, String dataset, int batchSize, int workers, double modelMs, String start) {
    /** A fresh process with nothing untimed before the clock: what a user sees when a job starts. */
    public static final String COLD = "cold";
    /** The process first took the warm-up images untimed: the steady state of a job past its first seconds. */
    public static final String WARM = "warm";

    /** A file-name-safe label, e.g. {@code stoke-jpeg-b256-w2-m0-cold}. */
    public String label() {
        return String.format(
                Locale.ROOT, "%s-%s-b%d-w%d-m%s-%s", loader, dataset, batchSize, workers, fmtMs(modelMs), start);
    }

    static String fmtMs(double ms) {
        return ms == Math.rint(ms) ? Long.toString((long) ms) : String.format(Locale.ROOT, "%.3f", ms);
    }

    /** The same settings for the other loader. */
    public RunKey withLoader(String other) {
        return new RunKey(other, dataset, batchSize, workers, modelMs, start);
    }
}
