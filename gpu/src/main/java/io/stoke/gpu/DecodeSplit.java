package io.stoke.gpu;

/**
 * How many of a batch's JPEGs the CPU threads decode while the GPU decodes the rest, so that both
 * sides finish together: {@code m = n * g / (g + c)}, where {@code g} is the GPU side's time per
 * image and {@code c} the CPU side's (all its threads together), each measured on the batches
 * before and smoothed. The GPU side's time is the longer of two: the span of the events recorded on
 * the stream around its decode and resize, and the decode thread's own time for them (nvJPEG's host
 * side and queuing the resize). The thread does one batch at a time, so where its host work is the
 * longer, that bounds the GPU side. Until both are measured it gives the CPU an eighth of the
 * batch (at least one image, and never a batch's only image before the GPU is measured), to measure
 * both; after, it never gives it none of a batch of 16 or more, so its rate stays known. Used by one
 * thread (the GPU decode stage's).
 */
final class DecodeSplit {
    /** Weight of the past in the smoothed rates: a few batches' memory, so a slow batch does not swing it. */
    static final double KEEP = 0.7;

    private double gpuNanosPerImage = Double.NaN;
    private double gpuHostNanosPerImage = Double.NaN;
    private double cpuNanosPerImage = Double.NaN;

    /** The CPU's share of a batch whose {@code jpegs} files could go to either side. */
    int cpuCount(int jpegs) {
        if (jpegs <= 0) {
            return 0;
        }
        if (Double.isNaN(gpuNanosPerImage) || Double.isNaN(cpuNanosPerImage)) {
            // Probing: each side gets some of the batch. A batch of one goes to the side not yet
            // measured, the GPU first, so that neither is starved of its first measurement.
            if (jpegs == 1) {
                return Double.isNaN(gpuNanosPerImage) ? 0 : 1;
            }
            return Math.max(1, jpegs / 8);
        }
        int least = jpegs >= 16 ? 1 : 0;
        double g = gpuNanosPerImage();
        double share = g / (g + cpuNanosPerImage);
        return (int) Math.max(least, Math.min(jpegs, Math.round(jpegs * share)));
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

    /** The CPU side took {@code nanos} of wall time (its threads in parallel) for {@code images}. */
    void cpuMeasured(long nanos, int images) {
        if (images > 0 && nanos > 0) {
            cpuNanosPerImage = smooth(cpuNanosPerImage, (double) nanos / images);
        }
    }

    private static double smooth(double past, double now) {
        return Double.isNaN(past) ? now : KEEP * past + (1 - KEEP) * now;
    }

    /** The GPU side's time per image: the longer of the device's and the decode thread's, where measured. */
    double gpuNanosPerImage() {
        return Double.isNaN(gpuHostNanosPerImage) ? gpuNanosPerImage : Math.max(gpuNanosPerImage, gpuHostNanosPerImage);
    }

    double cpuNanosPerImage() {
        return cpuNanosPerImage;
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
