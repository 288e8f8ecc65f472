package io.stoke.bench.harness;

/**
 * How far one loader's first batch is from torchvision's PIL path's on the same images: the mean
 * and the largest absolute difference of a uint8 channel value, so that a faster loader that gives
 * other pixels is read as such.
 *
 * @param loader  the loader, as {@link HarnessLoaders} names it
 * @param images  the images compared
 * @param meanAbs mean absolute difference over every channel value; NaN when {@code error} is set
 * @param maxAbs  largest absolute difference; -1 when {@code error} is set
 * @param error   why the loader's first batch could not be compared; null when it was
 */
public record PixelDifference(String loader, int images, double meanAbs, int maxAbs, String error) {
    /**
     * Compares {@code batch} with {@code reference}, both uint8 {@code [n, H, W, 3]} of the same
     * images in the same order, {@code sampleBytes} each.
     */
    public static PixelDifference of(String loader, byte[] reference, byte[] batch, int sampleBytes) {
        if (batch.length != reference.length || reference.length % sampleBytes != 0) {
            return failed(
                    loader,
                    "its first batch has " + batch.length + " bytes, torchvision's PIL path's " + reference.length
                            + " (" + sampleBytes + " a sample)");
        }
        long sum = 0;
        int max = 0;
        for (int i = 0; i < reference.length; i++) {
            int d = Math.abs((reference[i] & 0xff) - (batch[i] & 0xff));
            sum += d;
            max = Math.max(max, d);
        }
        return new PixelDifference(
                loader,
                reference.length / sampleBytes,
                reference.length == 0 ? 0 : (double) sum / reference.length,
                max,
                null);
    }

    /** A loader whose first batch could not be compared, and why. */
    public static PixelDifference failed(String loader, String why) {
        return new PixelDifference(loader, 0, Double.NaN, -1, why);
    }

    public boolean ok() {
        return error == null;
    }
}
