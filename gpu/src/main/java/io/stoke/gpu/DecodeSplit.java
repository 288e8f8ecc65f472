package io.stoke.gpu;

/**
 * How much of a batch the CPU threads decode while the GPU decodes the rest, so that the batch ends
 * soonest: the CPU's round holds what nvJPEG will not take and, from the batch's end, as many of
 * the JPEGs it would as end the batch sooner on the CPU than on the GPU.
 *
 * <p>The GPU side's time is {@code g} an image: the longer of the span of the events recorded on the
 * stream around its decode and resize, and the decode thread's own time for them (nvJPEG's host
 * side and queuing the resize); the thread does one batch at a time, so where its host work is the
 * longer, that bounds the GPU side. The CPU's round is foreseen from a thread's busy time per unit
 * of a file's estimated cost ({@code EncodedBatch}: its bytes, three times over for a progressive
 * file), as the longer of its units spread over the threads and its largest file. A round ends when
 * its last file does: read as its wall time over its images, a round of a few costly files (a
 * progressive one, a large one) looked slower per image than the threads are, and the share shrank
 * until it was mostly such a tail (docs/benchmarks/results-gpu-decode, benchmarks/gpu/split-rounds).
 *
 * <p>Whole batches ({@link #whole}): a round per batch ends when its last file does, so the threads
 * idle through each round's tail (at 66 files on 16 threads, about half their rate: the model in
 * benchmarks/gpu/split-rounds). Where the threads can decode a whole batch while the GPU decodes the
 * batches beside it, they take it whole, in the background, and the GPU's batches keep only what
 * nvJPEG will not take: the threads then never wait for a round's tail. Batches are delivered in
 * order, so a whole batch the CPU takes holds back the GPU's batches after it until it ends; it is
 * taken only when it would end before the GPU runs out of free buffers for those.
 *
 * <p>Until both sides are measured it gives the CPU an eighth of the batch's JPEGs (at least one,
 * and never a batch's only image before the GPU is measured), to measure both; after, never none
 * of 16 or more, so its rate stays known. Rates are smoothed over a few batches. Used by one thread
 * (the GPU decode stage's).
 */
final class DecodeSplit {
    /** Weight of the past in the smoothed rates: a few batches' memory, so a slow batch does not swing it. */
    static final double KEEP = 0.7;

    private double gpuNanosPerImage = Double.NaN;
    private double gpuHostNanosPerImage = Double.NaN;
    private double cpuNanosPerImage = Double.NaN;
    private double threadNanosPerUnit = Double.NaN;
    private double wholeNanosPerImage = Double.NaN;
    /**
     * A whole batch's measured time over what the threads' rate foresaw for it when it ended: what
     * sharing the threads with the GPU's batches' rounds and reads costs it. Smoothed.
     */
    private double wholeOverForeseen = Double.NaN;

    /**
     * The CPU's share: how many of {@code jpegs} files either side could take join the CPU's round,
     * which holds {@code roundUnits} already (what nvJPEG leaves; its largest file {@code
     * roundLargest}) on {@code threads} threads. {@code units[k]} is candidate k's estimated cost,
     * in the order they would be taken (the batch's last first): they join while the batch would
     * end sooner.
     */
    int share(long[] units, int jpegs, double roundUnits, double roundLargest, int threads) {
        if (!measured()) {
            return probeCount(jpegs);
        }
        int least = least(jpegs);
        double round = roundUnits;
        double largest = roundLargest;
        int m = 0;
        while (m < jpegs && (m < least || sooner(round, largest, units[m], jpegs - m, threads))) {
            round += units[m];
            largest = Math.max(largest, units[m]);
            m++;
        }
        return m;
    }

    /** Whether both sides are measured: until then {@link #probeCount} gives the share. */
    boolean measured() {
        return !Double.isNaN(gpuNanosPerImage()) && !Double.isNaN(threadNanosPerUnit);
    }

    /** The share of a batch with {@code jpegs} files either side could take, while a side is not measured. */
    private int probeCount(int jpegs) {
        if (jpegs <= 0) {
            return 0;
        }
        // A batch of one goes to the side not yet measured, the GPU first, so that neither is starved
        // of its first measurement.
        if (jpegs == 1) {
            return Double.isNaN(gpuNanosPerImage) ? 0 : 1;
        }
        return Math.max(1, jpegs / 8);
    }

    /** The least share of {@code jpegs}, once measured: one of a batch of 16 or more, so the CPU's rate stays known. */
    private static int least(int jpegs) {
        return jpegs >= 16 ? 1 : 0;
    }

    /**
     * Whether a round of {@code units} (its largest file {@code largest}) on {@code threads} threads
     * ends the batch sooner with one more file of {@code u} units, the GPU's part then one image
     * fewer than {@code gpuImages}. After {@link #measured}.
     */
    private boolean sooner(double units, double largest, double u, int gpuImages, int threads) {
        double g = gpuNanosPerImage();
        double before = Math.max(roundNanos(units, largest, threads), g * gpuImages);
        double after = Math.max(roundNanos(units + u, Math.max(largest, u), threads), g * (gpuImages - 1));
        return after < before;
    }

    /** The CPU round's time foreseen: the longer of its units over the threads and its largest file. */
    double roundNanos(double units, double largest, int threads) {
        return threadNanosPerUnit * Math.max(units / threads, largest);
    }

    /**
     * Whether the next batch, of {@code images}, goes whole to the CPU threads, which still have
     * {@code backlog} images of earlier whole batches to decode, while the GPU can decode {@code
     * beside} batches of its own after it before it waits for it (the free device buffers). Yes when,
     * foreseen at the CPU's whole-batch rate, the backlog and the batch end no later than the GPU's
     * batch now and those beside it: then nothing waits for it. The rate is a thread's busy time for
     * the mean image ({@code unitsPerImage} units) over the threads, times what the whole batches
     * measured so far took over that ({@link #wholeMeasured}): it follows the threads' rate as the
     * rounds measure it, so one slow whole batch does not stop them for good. After {@link #measured}
     * only.
     */
    boolean whole(int images, long backlog, int beside, double unitsPerImage, int threads) {
        if (!measured() || images <= 0) {
            return false;
        }
        double c = foreseenWholeNanos(unitsPerImage, threads);
        if (!Double.isNaN(wholeOverForeseen)) {
            c *= wholeOverForeseen;
        }
        return (backlog + images) * c <= gpuNanosPerImage() * images * (beside + 1.0);
    }

    /** A whole batch's time per image as the threads' rate foresees it, with the threads all its own. */
    private double foreseenWholeNanos(double unitsPerImage, int threads) {
        return threadNanosPerUnit * unitsPerImage / threads;
    }

    /**
     * A whole batch of {@code images} took the threads {@code nanos}: from its start, or the end of
     * the whole batch before it where that was later, to its last image's end. {@code unitsPerImage}
     * and {@code threads} as for {@link #whole}.
     */
    void wholeMeasured(long nanos, int images, double unitsPerImage, int threads) {
        if (images <= 0 || nanos <= 0) {
            return;
        }
        double perImage = (double) nanos / images;
        wholeNanosPerImage = smooth(wholeNanosPerImage, perImage);
        double foreseen = foreseenWholeNanos(unitsPerImage, threads);
        if (foreseen > 0) { // NaN compares false: not before the threads' rate is measured
            wholeOverForeseen = smooth(wholeOverForeseen, perImage / foreseen);
        }
    }

    /** The threads' smoothed wall time per image of a whole batch, NaN until one is measured. */
    double wholeNanosPerImage() {
        return wholeNanosPerImage;
    }

    /** The GPU side took {@code nanos} (decode call to resized pixels) for {@code images}. */
    void gpuMeasured(long nanos, int images) {
        if (images > 0 && nanos > 0) {
            gpuNanosPerImage = smooth(gpuNanosPerImage, (double) nanos / images);
        }
    }

    /** The decode thread's own part of the GPU side took {@code nanos} of wall time for {@code images}. */
    void gpuHostMeasured(long nanos, int images) {
        if (images > 0 && nanos > 0) {
            gpuHostNanosPerImage = smooth(gpuHostNanosPerImage, (double) nanos / images);
        }
    }

    /**
     * The CPU's round of {@code images} files, {@code units} of estimated cost, took {@code wallNanos}
     * from its start to its last file's end, and its threads {@code busyNanos} between them (each
     * thread's own start to end of its part).
     */
    void cpuMeasured(long wallNanos, int images, long busyNanos, double units) {
        if (images > 0 && wallNanos > 0) {
            cpuNanosPerImage = smooth(cpuNanosPerImage, (double) wallNanos / images);
        }
        if (units > 0 && busyNanos > 0) {
            threadNanosPerUnit = smooth(threadNanosPerUnit, busyNanos / units);
        }
    }

    private static double smooth(double past, double now) {
        return Double.isNaN(past) ? now : KEEP * past + (1 - KEEP) * now;
    }

    /** The GPU side's time per image: the longer of the device's and the decode thread's, where measured. */
    double gpuNanosPerImage() {
        return Double.isNaN(gpuHostNanosPerImage) ? gpuNanosPerImage : Math.max(gpuNanosPerImage, gpuHostNanosPerImage);
    }

    /** The CPU rounds' smoothed wall time per image, all threads together, NaN until measured: what a round looked like. */
    double cpuNanosPerImage() {
        return cpuNanosPerImage;
    }

    /** A CPU thread's smoothed busy time per unit of estimated cost, NaN until measured: what the split foresees from. */
    double threadNanosPerUnit() {
        return threadNanosPerUnit;
    }

    /** The events' smoothed span per GPU image, NaN until measured. */
    double spanNanosPerImage() {
        return gpuNanosPerImage;
    }

    /** The decode thread's smoothed time per GPU image, NaN until measured. */
    double hostNanosPerImage() {
        return gpuHostNanosPerImage;
    }
}
