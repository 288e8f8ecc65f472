package io.stoke.tune;

import io.stoke.loader.Batch;
import java.time.Duration;
import java.util.Locale;

/**
 * A simulated model: the consumer sleeps {@code msPerBatch + msPerImage * images} for each batch,
 * using no CPU (a model on an accelerator, as the benchmarks' harness simulates one).
 */
public final class SleepStep implements Step {
    private final double msPerBatch;
    private final double msPerImage;

    public SleepStep(double msPerBatch, double msPerImage) {
        if (!(msPerBatch >= 0) || !(msPerImage >= 0) || Double.isInfinite(msPerBatch + msPerImage)) {
            throw new IllegalArgumentException("the step's milliseconds must be finite and at least 0");
        }
        this.msPerBatch = msPerBatch;
        this.msPerImage = msPerImage;
    }

    /** Milliseconds slept for a batch of {@code images}. */
    public double millis(int images) {
        return msPerBatch + msPerImage * images;
    }

    @Override
    public void run(Batch batch) throws InterruptedException {
        long nanos = Math.round(millis(batch.size()) * 1e6);
        if (nanos > 0) {
            Thread.sleep(Duration.ofNanos(nanos));
        }
    }

    @Override
    public StepCost cost(int batchSize, BatchSupplier loader, double budgetSeconds) {
        // A sleep's length is what was asked for; timing it would only add the scheduler's noise.
        return new StepCost(batchSize, millis(batchSize) / 1e3, 0, false);
    }

    @Override
    public String describe() {
        if (msPerImage == 0) {
            return msPerBatch == 0
                    ? "no step (loader-bound)"
                    : String.format(Locale.ROOT, "sleep %s ms per batch", num(msPerBatch));
        }
        return msPerBatch == 0
                ? String.format(Locale.ROOT, "sleep %s ms per image of the batch", num(msPerImage))
                : String.format(
                        Locale.ROOT, "sleep %s ms per batch + %s ms per image", num(msPerBatch), num(msPerImage));
    }

    private static String num(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }
}
