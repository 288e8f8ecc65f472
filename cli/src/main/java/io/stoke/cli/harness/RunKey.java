package io.stoke.cli.harness;

import java.util.Locale;

/**
 * One point of the sweep: which loader, on which dataset, with which settings.
 *
 * @param loader    {@code stoke} or {@code pytorch}
 * @param dataset   {@code jpeg} or {@code raw} (preprocessed 224x224x3 uint8 tensors on disk)
 * @param batchSize samples per batch
 * @param workers   Stoke's decoding threads, or PyTorch's worker processes
 * @param modelMs   simulated model time per batch, slept by the consumer after each batch
 */
public record RunKey(String loader, String dataset, int batchSize, int workers, double modelMs) {
    /** A file-name-safe label, e.g. {@code stoke-jpeg-b256-w2-m0}. */
    public String label() {
        return String.format(Locale.ROOT, "%s-%s-b%d-w%d-m%s", loader, dataset, batchSize, workers, fmtMs(modelMs));
    }

    static String fmtMs(double ms) {
        return ms == Math.rint(ms) ? Long.toString((long) ms) : String.format(Locale.ROOT, "%.3f", ms);
    }

    /** The same settings for the other loader. */
    public RunKey withLoader(String other) {
        return new RunKey(other, dataset, batchSize, workers, modelMs);
    }
}
