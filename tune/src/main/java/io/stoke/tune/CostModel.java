package io.stoke.tune;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Predicts images/s at (batch size, workers) from a few measurements: what decoding costs per image
 * at one worker and at every core (so it sees how decoding scales on this machine's cores), and
 * what the consumer's step costs at each batch size. One batch takes, in the steady state, the
 * longest of three things:
 *
 * <ul>
 *   <li>the step: {@code step(b)};
 *   <li>decoding it: {@code b / decode(w)}, where {@code decode(w)} is the lesser of {@code w} workers'
 *       pace (wall time per image per worker, interpolated between the two probes, the all-core
 *       one's past the cores) and what the cores can do ({@code cores / cpu per image}: past the
 *       cores more workers help only where decoding waits on I/O);
 *   <li>the CPU both need: {@code (modelCores * step(b) + b * cpu per image) / cores}, where the step
 *       runs on the same cores (an ONNX model on the CPU); a sleep takes none.
 * </ul>
 *
 * <p>images/s = b / that. The step and the decoding overlap (the workers fill the ring's other slots
 * while the consumer steps), which is why it is the longest and not the sum.
 */
public final class CostModel {
    /** Which term bounds a point. */
    public enum Bound {
        /** The consumer's step: more workers cannot help. */
        step,
        /** Decoding: the workers do not keep up. */
        decode,
        /** The cores: the step and the decoding share them and both are busy. */
        cores
    }

    /**
     * Decoding alone (no step) at {@code workers}.
     *
     * @param batchSize             the probe's batch size
     * @param workers               decoding threads
     * @param imagesPerSecond       measured
     * @param cpuSecondsPerImage    the process's CPU time per image (the workers' and everything the
     *     loader needs beside them: the consumer taking batches, the JVM), -1 where not measurable
     * @param workerCpuSecondsPerImage the decoding threads' own CPU time per image (-1: not measurable)
     * @param otherCores            the cores other processes kept busy meanwhile (-1: not measurable)
     */
    public record DecodeCost(
            int batchSize,
            int workers,
            double imagesPerSecond,
            double cpuSecondsPerImage,
            double workerCpuSecondsPerImage,
            double otherCores) {
        /** Wall seconds one worker spends per image: workers / images/s. */
        public double wallSecondsPerImagePerWorker() {
            return workers / imagesPerSecond;
        }
    }

    /** A prediction. */
    public record Prediction(int batchSize, int workers, double imagesPerSecond, Bound bound) {}

    private final int cores;
    private final DecodeCost one;
    private final DecodeCost all;
    private final Map<Integer, Step.StepCost> steps;

    /**
     * @param cores the machine's cores
     * @param one   decoding at 1 worker
     * @param all   decoding at every core (may be {@code one} on a single core)
     * @param steps the step's cost at each batch size
     */
    public CostModel(int cores, DecodeCost one, DecodeCost all, List<Step.StepCost> steps) {
        if (one.workers() != 1 || all.workers() < 1) {
            throw new IllegalArgumentException("decode probes at 1 worker and at the cores, not " + one + ", " + all);
        }
        this.cores = cores;
        this.one = one;
        this.all = all;
        this.steps = new TreeMap<>();
        for (Step.StepCost s : steps) {
            this.steps.put(s.batchSize(), s);
        }
    }

    /** Wall seconds per image per worker at {@code workers}: interpolated between the probes, flat past them. */
    double wallPerImagePerWorker(int workers) {
        return interpolate(one.wallSecondsPerImagePerWorker(), all.wallSecondsPerImagePerWorker(), workers);
    }

    /**
     * CPU seconds per image at {@code workers}; the wall time where the JVM could not measure the
     * process's CPU (then decoding is taken to be CPU-bound: {@link Tuner} says so).
     */
    double cpuPerImage(int workers) {
        if (one.cpuSecondsPerImage() <= 0 || all.cpuSecondsPerImage() <= 0) {
            return wallPerImagePerWorker(workers);
        }
        return interpolate(one.cpuSecondsPerImage(), all.cpuSecondsPerImage(), workers);
    }

    private double interpolate(double atOne, double atAll, int workers) {
        if (all.workers() == 1 || workers <= 1) {
            return atOne;
        }
        if (workers >= all.workers()) {
            return atAll;
        }
        double f = (workers - 1) / (double) (all.workers() - 1);
        return atOne + f * (atAll - atOne);
    }

    /**
     * Images/s that {@code workers} decode with no step, as this model sees it. The cores' bound
     * counts only those the all-core probe found free: cores another process kept busy then were
     * not idle cores that more workers could have used.
     */
    public double decodeImagesPerSecond(int workers) {
        double free = cores - Math.max(0, all.otherCores());
        return Math.min(workers / wallPerImagePerWorker(workers), free / cpuPerImage(workers));
    }

    public Prediction predict(int batchSize, int workers) {
        Step.StepCost step = steps.get(batchSize);
        if (step == null) {
            throw new IllegalArgumentException("no step cost for batch size " + batchSize);
        }
        double stepS = step.seconds();
        double decodeS = batchSize / decodeImagesPerSecond(workers);
        double coresS = (step.modelCores() * stepS + batchSize * cpuPerImage(workers)) / cores;
        double period = Math.max(stepS, Math.max(decodeS, coresS));
        Bound bound = period == stepS ? Bound.step : period == decodeS ? Bound.decode : Bound.cores;
        return new Prediction(batchSize, workers, batchSize / period, bound);
    }

    public int cores() {
        return cores;
    }

    public DecodeCost one() {
        return one;
    }

    public DecodeCost all() {
        return all;
    }

    public Step.StepCost step(int batchSize) {
        return steps.get(batchSize);
    }
}
