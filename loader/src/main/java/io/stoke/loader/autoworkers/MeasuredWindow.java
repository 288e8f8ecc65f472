package io.stoke.loader.autoworkers;

/**
 * What the pipeline did over one window of batches: the signals {@link AutoWorkersRule} decides from.
 * Counted by the live pipeline on the wall clock, or by a simulation in virtual time.
 *
 * @param elapsedNanos        the window's length
 * @param batches             batches the consumer took in it (the window ends just after a take)
 * @param samples             samples decoded in it
 * @param activeWorkers       workers that were taking samples
 * @param consumerWaitNanos   how long the consumer waited for a batch, summed (the stall)
 * @param workerCpuNanos      CPU time the active workers ran, summed ({@code schedstat}'s run time)
 * @param workerRunQueueNanos time the active workers were runnable but waited for a CPU, summed:
 *     contention with other threads (a model's) on the cores shows here directly; -1 when unknown
 * @param workerSlotWaitNanos time the workers waited for a free slot, summed: the producers were
 *     ahead of the consumer
 * @param readyLow            the fewest batches ready for the consumer at any sample of the window
 * @param readyHigh           the most
 */
public record MeasuredWindow(
        long elapsedNanos,
        long batches,
        long samples,
        int activeWorkers,
        long consumerWaitNanos,
        long workerCpuNanos,
        long workerRunQueueNanos,
        long workerSlotWaitNanos,
        int readyLow,
        int readyHigh) {

    /** The fraction of the window the consumer waited for a batch. */
    public double stallFraction() {
        return elapsedNanos <= 0 ? 0 : Math.min(1.0, (double) consumerWaitNanos / elapsedNanos);
    }

    /** Cores' worth of CPU the workers used: the decoding the demand takes, in workers. */
    public double decodeCores() {
        return elapsedNanos <= 0 ? 0 : (double) workerCpuNanos / elapsedNanos;
    }

    /** Samples per second decoded. */
    public double samplesPerSecond() {
        return elapsedNanos <= 0 ? 0 : samples * 1e9 / elapsedNanos;
    }

    /** Batches per second the consumer took: the rate the rule compares between windows. */
    public double rate() {
        return elapsedNanos <= 0 ? 0 : batches * 1e9 / elapsedNanos;
    }

    /** The fraction of their runnable time the workers waited for a CPU, or -1 when unknown. */
    public double runQueueFraction() {
        if (workerRunQueueNanos < 0) {
            return -1;
        }
        long runnable = workerCpuNanos + workerRunQueueNanos;
        return runnable <= 0 ? 0 : (double) workerRunQueueNanos / runnable;
    }
}
