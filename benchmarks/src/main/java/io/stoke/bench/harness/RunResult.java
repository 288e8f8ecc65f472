package io.stoke.bench.harness;

/**
 * What one run measured. Times are seconds unless named otherwise.
 *
 * @param key         the settings
 * @param repeat      0-based repeat number
 * @param images      images delivered
 * @param elapsedS    end to end: from before the loader was created (Stoke's {@code build()},
 *                    PyTorch's {@code iter(loader)}, which starts the workers) to the last batch consumed
 * @param waitNs      every batch's consumer wait in nanoseconds, in order; the first one runs from
 *                    the same start as {@code elapsedS}, so it is the time to first batch
 * @param processStartToFirstBatchS from the harness starting the run's process to the process
 *                    receiving its first batch (JVM start or Python's imports included: what a user
 *                    waits for); NaN when the process never said it had one
 * @param peakRssBytes the peak, over samples, of the summed VmRSS of the process tree (counts
 *                    pages shared between processes once per process)
 * @param peakPssBytes the peak of the summed Pss (shared pages split between their sharers)
 * @param sumHwmBytes  the sum of each process's own VmHWM (an upper bound on the tree's peak)
 * @param cpuS        CPU time (user + system) of the process tree during the timed span
 * @param cpuTotalS   CPU time of the whole child process tree, start-up and warm-up included
 * @param error       null, or why the run failed
 */
public record RunResult(
        RunKey key,
        int repeat,
        long images,
        double elapsedS,
        long[] waitNs,
        double processStartToFirstBatchS,
        long peakRssBytes,
        long peakPssBytes,
        long sumHwmBytes,
        double cpuS,
        double cpuTotalS,
        String error) {
    public boolean ok() {
        return error == null;
    }

    public double imagesPerSecond() {
        return elapsedS > 0 ? images / elapsedS : Double.NaN;
    }

    /** The first batch's wait, in seconds; NaN when no batch arrived. */
    public double timeToFirstBatchS() {
        return waitNs.length == 0 ? Double.NaN : waitNs[0] / 1e9;
    }

    /**
     * The q-quantile of the per-batch waits in milliseconds, leaving out the first batch (its wait
     * is the time to first batch, reported on its own); NaN with fewer than two batches.
     */
    public double waitQuantileMs(double q) {
        if (waitNs.length < 2) {
            return Double.NaN;
        }
        double[] ms = new double[waitNs.length - 1];
        for (int i = 1; i < waitNs.length; i++) {
            ms[i - 1] = waitNs[i] / 1e6;
        }
        return Stats.quantile(ms, q);
    }

    /** A failed run, kept so that the summary can say it failed. */
    public static RunResult failed(RunKey key, int repeat, String error) {
        return new RunResult(
                key, repeat, 0, Double.NaN, new long[0], Double.NaN, 0, 0, 0, Double.NaN, Double.NaN, error);
    }
}
