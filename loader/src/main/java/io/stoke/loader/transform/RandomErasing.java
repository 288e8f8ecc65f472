package io.stoke.loader.transform;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;

import java.io.Serializable;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

/**
 * torchvision's {@code RandomErasing(p, scale, ratio, value)} on a sample already written as
 * float32 channels first (after {@code ToTensor} and {@code Normalize}, where the recipes place
 * it), drawn from a {@link CounterRandom}: one draw for whether to erase, then
 * {@code RandomErasing.get_params}' ten tries of an area fraction uniform in {@code scale} and an
 * aspect ratio log-uniform in {@code ratio}, {@code h = round(sqrt(area * aspect))} and
 * {@code w = round(sqrt(area / aspect))} (torchvision's order, not the crop's), kept when both are
 * smaller than the image, placed uniformly; no try kept erases nothing, as torchvision returns
 * the image. The box is then {@code F.erase}'d in place: every value of channel {@code c} set to
 * {@code value[c]} (one value: all channels), or with {@code value == null} ({@code "random"}) to
 * standard normal draws of the same stream, channel by channel, row by row.
 *
 * <p>The stream is keyed as the crop's, by (seed, epoch, dataset index) alone, so a resumed or
 * elastic run erases the same boxes with the same values.
 *
 * <p>With {@code uint8}, it is the {@code RandomErasing} torchvision allows on {@code
 * PILToTensor()}'s (or v2's {@code ToImage()}'s) uint8 image, before any conversion to float32:
 * each value is cast to uint8 as torch casts a float, by truncation ({@code 127.9} is 127), and
 * the erased bytes are then converted and normalised as every other pixel is. Only values in
 * {@code [0, 256)} are taken: torch wraps larger ones and casts negative ones as the CPU does
 * (255 for -1.5 on x86), and for the same reason {@code "random"} is refused there.
 *
 * @param p        probability of erasing (torchvision: 0.5)
 * @param scaleMin smallest erased area fraction (0.02)
 * @param scaleMax largest erased area fraction (0.33)
 * @param ratioMin smallest aspect ratio, height / width as torchvision draws it (0.3)
 * @param ratioMax largest aspect ratio (3.3)
 * @param value    one value or one per channel, in the output's units (after Normalize), or in
 *     uint8's with {@code uint8}; null: random
 * @param uint8    whether the uint8 image is erased, before the conversion to float32, rather than
 *     the float32 output after Normalize
 */
public record RandomErasing(
        double p, double scaleMin, double scaleMax, double ratioMin, double ratioMax, float[] value, boolean uint8)
        implements Serializable {
    private static final int TRIES = 10;

    public RandomErasing {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("RandomErasing's p must be in [0, 1], not " + p);
        }
        if (!(scaleMin >= 0 && scaleMin <= scaleMax && scaleMax <= 1)) {
            throw new IllegalArgumentException("RandomErasing's scale must satisfy 0 <= min <= max <= 1, not ("
                    + scaleMin + ", " + scaleMax + ")");
        }
        if (!(ratioMin > 0 && ratioMin <= ratioMax && Double.isFinite(ratioMax))) {
            throw new IllegalArgumentException(
                    "RandomErasing's ratio must satisfy 0 < min <= max, not (" + ratioMin + ", " + ratioMax + ")");
        }
        if (value != null && value.length != 1 && value.length != 3) {
            throw new IllegalArgumentException(
                    "RandomErasing's value needs 1 or 3 numbers (or random), not " + Arrays.toString(value));
        }
        if (uint8 && value == null) {
            throw new IllegalArgumentException("RandomErasing(value='random') on a uint8 image is refused: torchvision "
                    + "casts its standard normal draws to uint8, which makes most of them 0 and a negative one "
                    + "whatever the CPU's cast gives (255 on x86, 0 on ARM): give a value, or erase after "
                    + "ToDtype(torch.float32, scale=True) and Normalize");
        }
        if (uint8) {
            for (float v : value) {
                if (!(v >= 0 && v < 256)) {
                    throw new IllegalArgumentException(
                            "RandomErasing's value on a uint8 image must be in [0, 256), not "
                                    + Arrays.toString(value)
                                    + ": torch wraps a larger one, and casts a negative one as the "
                                    + "CPU does");
                }
            }
        }
        value = value == null ? null : value.clone();
    }

    /** The erasing of the float32 output, after Normalize (as {@code uint8} false). */
    public RandomErasing(double p, double scaleMin, double scaleMax, double ratioMin, double ratioMax, float[] value) {
        this(p, scaleMin, scaleMax, ratioMin, ratioMax, value, false);
    }

    /**
     * With {@code uint8}: the bytes channel {@code c} is erased to, torch's cast of the value
     * (truncation).
     */
    public int valueByte(int c) {
        if (!uint8) {
            throw new IllegalStateException("a float32 output's RandomErasing has no uint8 value");
        }
        return (int) value[value.length == 1 ? 0 : c];
    }

    /** The same draws, erasing the float32 output with {@code value} (the uint8 value once converted and normalised). */
    public RandomErasing onFloat32(float[] value) {
        return new RandomErasing(p, scaleMin, scaleMax, ratioMin, ratioMax, value, false);
    }

    /** torchvision's defaults: p 0.5, scale (0.02, 0.33), ratio (0.3, 3.3), value 0. */
    public static RandomErasing defaults() {
        return new RandomErasing(0.5, 0.02, 0.33, 0.3, 3.3, new float[] {0f});
    }

    @Override
    public float[] value() {
        return value == null ? null : value.clone();
    }

    /**
     * Draws whether and where to erase in a {@code width x height} image: true with {@code box}
     * set (its {@code flip} false), false when nothing is erased (not drawn, or no try fitted).
     */
    public boolean draw(int width, int height, CounterRandom random, CropBox box) {
        // Always one draw, so the box does not shift with the probability.
        if (!(random.nextDouble() < p)) {
            return false;
        }
        double area = (double) width * height;
        double logMin = Math.log(ratioMin);
        double logMax = Math.log(ratioMax);
        for (int t = 0; t < TRIES; t++) {
            double eraseArea = area * random.uniform(scaleMin, scaleMax);
            double aspect = Math.exp(random.uniform(logMin, logMax));
            int h = (int) Math.rint(Math.sqrt(eraseArea * aspect));
            int w = (int) Math.rint(Math.sqrt(eraseArea / aspect));
            if (h < height && w < width) {
                int top = random.nextInt(height - h + 1);
                int left = random.nextInt(width - w + 1);
                box.set(left, top, w, h, false);
                return true;
            }
        }
        return false;
    }

    /** Throws where {@code box} is not inside a {@code side x side} sample: nothing is written outside it. */
    private static void checkInside(CropBox box, int side) {
        if (box.width < 0
                || box.height < 0
                || box.left < 0
                || box.top < 0
                || box.left + box.width > side
                || box.top + box.height > side) {
            throw new IndexOutOfBoundsException("erase box " + box + " outside a " + side + "x" + side + " sample");
        }
    }

    /**
     * {@code F.erase} of {@code box} in the {@code side x side} float32 channels-first sample at
     * {@code dst[offset]}: its values, or for {@code "random"} standard normal draws of
     * {@code random} (after the box's). Everything written is checked to lie in the sample first.
     */
    public void erase(MemorySegment dst, long offset, int side, CropBox box, CounterRandom random) {
        Objects.checkFromIndexSize(offset, 12L * side * side, dst.byteSize());
        checkInside(box, side);
        long plane = 4L * side * side;
        for (int c = 0; c < 3; c++) {
            float fill = value == null ? 0f : value[value.length == 1 ? 0 : c];
            for (int y = box.top; y < box.top + box.height; y++) {
                long at = offset + c * plane + 4L * ((long) y * side + box.left);
                for (int x = 0; x < box.width; x++, at += 4) {
                    dst.set(JAVA_FLOAT_UNALIGNED, at, value == null ? (float) normal(random) : fill);
                }
            }
        }
    }

    /**
     * {@code F.erase} of {@code box} in the {@code side x side} uint8 sample stored RGB, pixel after
     * pixel (the ring's HWC layout), at {@code dst[offset]}: the {@link #valueByte}s. Everything
     * written is checked to lie in the sample first.
     */
    public void eraseBytes(MemorySegment dst, long offset, int side, CropBox box) {
        Objects.checkFromIndexSize(offset, 3L * side * side, dst.byteSize());
        checkInside(box, side);
        byte r = (byte) valueByte(0);
        byte g = (byte) valueByte(1);
        byte b = (byte) valueByte(2);
        for (int y = box.top; y < box.top + box.height; y++) {
            long at = offset + 3L * ((long) y * side + box.left);
            for (int x = 0; x < box.width; x++, at += 3) {
                dst.set(JAVA_BYTE, at, r);
                dst.set(JAVA_BYTE, at + 1, g);
                dst.set(JAVA_BYTE, at + 2, b);
            }
        }
    }

    /**
     * A standard normal draw: the Box-Muller transform's cosine half (one value per two uniforms,
     * so no state is carried between draws and the stream stays a plain sequence).
     */
    static double normal(CounterRandom random) {
        double u = 1.0 - random.nextDouble(); // (0, 1]: the log is finite
        double v = random.nextDouble();
        return Math.sqrt(-2.0 * Math.log(u)) * Math.cos(2.0 * Math.PI * v);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RandomErasing e
                && p == e.p
                && scaleMin == e.scaleMin
                && scaleMax == e.scaleMax
                && ratioMin == e.ratioMin
                && ratioMax == e.ratioMax
                && uint8 == e.uint8
                && Arrays.equals(value, e.value);
    }

    @Override
    public int hashCode() {
        return Objects.hash(p, scaleMin, scaleMax, ratioMin, ratioMax, uint8, Arrays.hashCode(value));
    }

    @Override
    public String toString() {
        return "RandomErasing(p=" + p + ", scale=(" + scaleMin + ", " + scaleMax + "), ratio=(" + ratioMin + ", "
                + ratioMax + "), value=" + (value == null ? "random" : Arrays.toString(value))
                + (uint8 ? ", on uint8" : "")
                + ")";
    }
}
