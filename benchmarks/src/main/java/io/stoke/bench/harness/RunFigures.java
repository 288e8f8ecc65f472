package io.stoke.bench.harness;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * What one run's process writes as JSON when it is done ({@code --json FILE}): Stoke's
 * {@link StokeRunCommand} and PyTorch's {@code benchmarks/python/torch_loader.py} write the same
 * fields, snake_case ({@code batch_size}, {@code elapsed_s}, {@code wait_ns}, ...). The harness
 * adds what it measured from outside (memory, CPU) to make a {@link RunResult}.
 *
 * @param loader    {@code stoke} or {@code pytorch}
 * @param dataset   {@code jpeg} or {@code raw}
 * @param batchSize samples per batch
 * @param workers   decoding threads or worker processes
 * @param modelMs   simulated model time per batch
 * @param warmupImages images taken untimed before the timed epoch (0 in a cold run)
 * @param images    images delivered in the timed span
 * @param batches   batches delivered in the timed span
 * @param elapsedS  the timed span, in seconds
 * @param waitNs    every batch's consumer wait, in nanoseconds, in order
 */
@JsonIgnoreProperties(ignoreUnknown = true) // a newer script may say more; these are what the harness needs
public record RunFigures(
        String loader,
        String dataset,
        int batchSize,
        int workers,
        double modelMs,
        int warmupImages,
        long images,
        int batches,
        double elapsedS,
        long[] waitNs) {

    /** Writes the figures to {@code file}, replacing it. */
    public void write(Path file) {
        try {
            HarnessJson.MAPPER.writeValue(file.toFile(), this);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    /** Reads a run's JSON; fails, naming the file, when a field is missing or malformed. */
    public static RunFigures read(Path file) {
        try {
            return HarnessJson.MAPPER.readValue(file.toFile(), RunFigures.class);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the run's figures in " + file + ": " + e.getMessage(), e);
        }
    }
}
