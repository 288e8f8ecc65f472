package io.stoke.loader.autoworkers;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Stoke's pipeline in virtual time, for the tuner's tests: {@code cores} CPUs shared fairly by the
 * runnable threads; workers that each decode at {@code 1 / cpuPerSample} samples per CPU-second
 * into a ring of {@code slots} batches; a consumer that holds one batch at a time for a step
 * (sleeping, as a GPU model does, or spinning on {@code consumerThreads} cores, as a CPU model does,
 * its step as slow as its slowest thread). Yielding workers get only the cores the consumer leaves.
 * A sample's cost
 * varies by up to {@code jitter} either way, from a seeded generator, so every run is the same.
 * It is the fluid version of the real thing: what it leaves out (the order of samples, the JIT,
 * caches) does not change how many workers keep a consumer fed.
 */
final class SimulatedPipeline {
    static final long TICK_NANOS = 250_000L;

    final int cores;
    final int batchSize;
    final int slots;
    final double cpuPerSampleNanos;
    final boolean consumerSpins;
    final double jitter;
    int consumerThreads = 1;
    /** The part of a spinning consumer's step it computes (the rest it sleeps: a sync, a launch). */
    double spinFraction = 1.0;

    boolean yielding;
    private final Random random;

    long stepNanos;
    int active;
    long now;
    private double samplesTowardBatch;
    private int ready;
    private boolean held;
    private double heldProgress;
    private double costNow;

    long batches;
    long consumerWait;
    final List<WorkerChange> decisions = new ArrayList<>();

    SimulatedPipeline(
            int cores,
            int batchSize,
            int slots,
            double cpuPerSampleNanos,
            long stepNanos,
            boolean consumerSpins,
            double jitter,
            long seed,
            int active) {
        this.cores = cores;
        this.batchSize = batchSize;
        this.slots = slots;
        this.cpuPerSampleNanos = cpuPerSampleNanos;
        this.stepNanos = stepNanos;
        this.consumerSpins = consumerSpins;
        this.jitter = jitter;
        this.random = new Random(seed);
        this.active = active;
        this.costNow = cost();
    }

    private double cost() {
        return cpuPerSampleNanos * (1 + jitter * (2 * random.nextDouble() - 1));
    }

    /** Runs {@code n} more batches consumed, with {@code tuner} (null: fixed workers); returns the totals over them. */
    Totals run(long n, AutoWorkersRule tuner) {
        long startNow = now;
        long startBatches = batches;
        long startWait = consumerWait;
        double cpu = 0;
        long wStart = now;
        long wBatches = 0;
        long wSamples = 0;
        double wCpu = 0;
        double wRunQueue = 0;
        double wSlotWait = 0;
        long wWait = 0;
        long consumed = 0;
        double samplesFrac = 0;
        while (consumed < n) {
            boolean tookOne = false;
            boolean consumerRunning = held && consumerSpins && heldProgress < spinFraction * stepNanos;
            boolean room = ready + (held ? 1 : 0) + 1 <= slots;
            int consumerRunnable = consumerRunning ? consumerThreads : 0;
            int runnable = (room ? active : 0) + consumerRunnable;
            double share = runnable == 0 ? 1 : Math.min(1.0, (double) cores / runnable);
            double consumerShare = share;
            double workerShare = share;
            if (yielding && consumerRunnable > 0) {
                consumerShare = Math.min(1.0, (double) cores / consumerRunnable);
                double left = Math.max(0, cores - consumerRunnable * consumerShare);
                workerShare = active == 0 ? 0 : Math.min(1.0, left / active);
            }
            if (room) {
                double cpuNanos = active * workerShare * TICK_NANOS;
                cpu += cpuNanos;
                wCpu += cpuNanos;
                wRunQueue += active * (1 - workerShare) * TICK_NANOS;
                double made = cpuNanos / costNow;
                samplesTowardBatch += made;
                samplesFrac += made;
                while (samplesTowardBatch >= batchSize) {
                    samplesTowardBatch -= batchSize;
                    ready++;
                    costNow = cost();
                    if (ready + (held ? 1 : 0) + 1 > slots) {
                        samplesTowardBatch = 0;
                        break;
                    }
                }
                long whole = (long) samplesFrac;
                wSamples += whole;
                samplesFrac -= whole;
            } else {
                wSlotWait += active * (double) TICK_NANOS;
            }
            if (held) {
                heldProgress += (consumerRunning ? consumerShare : 1.0) * TICK_NANOS;
                if (heldProgress >= stepNanos) {
                    held = false;
                    consumed++;
                    batches++;
                }
            }
            if (!held) {
                if (ready > 0) {
                    ready--;
                    held = true;
                    heldProgress = 0;
                    wBatches++;
                    tookOne = true;
                } else {
                    consumerWait += TICK_NANOS;
                    wWait += TICK_NANOS;
                }
            }
            now += TICK_NANOS;
            // As the live tuner: a window ends just after the consumer took a batch.
            if (tuner != null
                    && ((tookOne && AutoWorkersRule.windowComplete(now - wStart, wBatches))
                            || now - wStart >= AutoWorkersRule.MAX_WINDOW_NANOS)) {
                MeasuredWindow w = new MeasuredWindow(
                        now - wStart,
                        wBatches,
                        wSamples,
                        active,
                        wWait,
                        (long) wCpu,
                        (long) wRunQueue,
                        (long) wSlotWait,
                        0,
                        slots);
                WorkerChange d = tuner.observe(w, now);
                if (d != null) {
                    decisions.add(d);
                    active = d.toWorkers();
                    yielding = d.toYielding();
                }
                wStart = now;
                wBatches = 0;
                wSamples = 0;
                wCpu = 0;
                wRunQueue = 0;
                wSlotWait = 0;
                wWait = 0;
            }
        }
        return new Totals(now - startNow, batches - startBatches, consumerWait - startWait, cpu, active);
    }

    /** Over one {@link #run}: virtual time, batches consumed, the consumer's wait, worker CPU, workers at the end. */
    record Totals(long elapsedNanos, long batches, long waitNanos, double cpuNanos, int activeAtEnd) {
        double stallFraction() {
            return (double) waitNanos / elapsedNanos;
        }

        double batchesPerSecond() {
            return batches * 1e9 / elapsedNanos;
        }
    }
}
