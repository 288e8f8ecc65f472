package io.stoke.loader.augment;

import io.stoke.ffm.StokeAugment;
import java.lang.foreign.MemorySegment;

/**
 * The colour ops of the policies on an RGB image, 3 bytes a pixel, rows end to end: what
 * torchvision's functional ops do to a PIL image. The pixel loops are C ({@link StokeAugment});
 * what PIL computes in Python (the lookup tables of ImageOps, the mean grey of Contrast) is
 * computed here, the same way, in double where Python's floats are. Every extent is checked before
 * a call. One per worker: the tables are its own, reused for every image.
 */
public final class ColourOps {
    private final int[] histogram = new int[768];
    private final byte[] lut = new byte[768];
    private final MemorySegment histogramSegment = MemorySegment.ofArray(histogram);
    private final MemorySegment lutSegment = MemorySegment.ofArray(lut);

    /** Refuses where the C library is not built, naming why. */
    public ColourOps() {
        requireLibrary();
    }

    /** Throws, in one sentence naming why, where the augmentation library is not loaded. */
    public static void requireLibrary() {
        if (!StokeAugment.available()) {
            throw new IllegalStateException("Stoke cannot augment images here: " + StokeAugment.unavailableReason());
        }
    }

    private static long check(MemorySegment src, MemorySegment dst, int width, int height) {
        if (width < 1 || height < 1) {
            throw new IllegalArgumentException("image of " + width + "x" + height);
        }
        long bytes = 3L * width * height;
        if (src.byteSize() < bytes || dst.byteSize() < bytes) {
            throw new IndexOutOfBoundsException("a " + width + "x" + height + " RGB image needs " + bytes
                    + " bytes; source " + src.byteSize() + ", destination " + dst.byteSize());
        }
        return (long) width * height;
    }

    /**
     * {@code F.adjust_hue(img, factor)} on a PIL image: to HSV, the hue plus {@code int(factor * 255)}
     * modulo 256 (torchvision's {@code np.int32(hue_factor * 255).astype(np.uint8)}), back to RGB, as
     * PIL converts both ways. {@code factor} is in [-0.5, 0.5]; {@code dst} may be {@code src}.
     */
    public void hue(MemorySegment src, MemorySegment dst, int width, int height, double factor) {
        if (!(factor >= -0.5 && factor <= 0.5)) {
            throw new IllegalArgumentException("hue factor " + factor + " is not in [-0.5, 0.5]");
        }
        long pixels = check(src, dst, width, height);
        StokeAugment.hue(src, dst, pixels, ((int) (factor * 255.0)) & 0xFF);
    }

    /**
     * {@code F.rgb_to_grayscale(img, num_output_channels=3)} on a PIL image: {@code convert("L")}
     * (Convert.c's rounded luma) in each channel, which is Color's blend with its grey at factor 0
     * ({@code d + 0 * (s - d)} is {@code d} in float). {@code dst} may be {@code src}.
     */
    public void grayscale(MemorySegment src, MemorySegment dst, int width, int height) {
        long pixels = check(src, dst, width, height);
        StokeAugment.blend(src, dst, pixels, StokeAugment.DEGENERATE_GRAY, 0, 0.0f);
    }

    /** {@code F.adjust_brightness(img, factor)}: a blend with black. {@code dst} may be {@code src}. */
    public void brightness(MemorySegment src, MemorySegment dst, int width, int height, double factor) {
        long pixels = check(src, dst, width, height);
        StokeAugment.blend(src, dst, pixels, StokeAugment.DEGENERATE_BLACK, 0, (float) factor);
    }

    /** {@code F.adjust_saturation(img, factor)}: a blend with the image's grey. {@code dst} may be {@code src}. */
    public void color(MemorySegment src, MemorySegment dst, int width, int height, double factor) {
        long pixels = check(src, dst, width, height);
        StokeAugment.blend(src, dst, pixels, StokeAugment.DEGENERATE_GRAY, 0, (float) factor);
    }

    /**
     * {@code F.adjust_contrast(img, factor)}: a blend with a flat grey, the mean of the image's
     * {@code convert("L")} rounded half up ({@code int(ImageStat.Stat(l).mean[0] + 0.5)}).
     */
    public void contrast(MemorySegment src, MemorySegment dst, int width, int height, double factor) {
        long pixels = check(src, dst, width, height);
        double mean = (double) StokeAugment.graySum(src, pixels) / pixels;
        StokeAugment.blend(src, dst, pixels, StokeAugment.DEGENERATE_FLAT, (int) (mean + 0.5), (float) factor);
    }

    /** {@code F.adjust_sharpness(img, factor)}: a blend with ImageFilter.SMOOTH's output. {@code dst} is not {@code src}. */
    public void sharpness(MemorySegment src, MemorySegment dst, int width, int height, double factor) {
        check(src, dst, width, height);
        if (src.address() == dst.address() && src.isNative() && dst.isNative()) {
            throw new IllegalArgumentException("sharpness cannot run in place");
        }
        StokeAugment.sharpness(src, dst, width, height, (float) factor);
    }

    /** {@code F.posterize(img, bits)}: each value's low {@code 8 - bits} bits cleared. */
    public void posterize(MemorySegment src, MemorySegment dst, int width, int height, int bits) {
        if (bits < 0 || bits > 8) {
            throw new IllegalArgumentException("posterize keeps 0 to 8 bits, not " + bits);
        }
        int mask = ~((1 << (8 - bits)) - 1);
        for (int v = 0; v < 256; v++) {
            lut[v] = (byte) (v & mask);
        }
        applyOneTable(src, dst, width, height);
    }

    /** {@code F.solarize(img, threshold)}: values at or above the threshold inverted. */
    public void solarize(MemorySegment src, MemorySegment dst, int width, int height, double threshold) {
        for (int v = 0; v < 256; v++) {
            lut[v] = (byte) (v < threshold ? v : 255 - v);
        }
        applyOneTable(src, dst, width, height);
    }

    /** {@code F.invert(img)}. */
    public void invert(MemorySegment src, MemorySegment dst, int width, int height) {
        for (int v = 0; v < 256; v++) {
            lut[v] = (byte) (255 - v);
        }
        applyOneTable(src, dst, width, height);
    }

    /** {@code F.autocontrast(img)}: ImageOps.autocontrast with no cutoff, each channel stretched to 0..255. */
    public void autoContrast(MemorySegment src, MemorySegment dst, int width, int height) {
        long pixels = check(src, dst, width, height);
        StokeAugment.histogram(src, pixels, histogramSegment);
        for (int c = 0; c < 3; c++) {
            int base = 256 * c;
            int lo = 0;
            while (lo < 255 && histogram[base + lo] == 0) {
                lo++;
            }
            int hi = 255;
            while (hi > 0 && histogram[base + hi] == 0) {
                hi--;
            }
            if (hi <= lo) {
                for (int v = 0; v < 256; v++) {
                    lut[base + v] = (byte) v;
                }
                continue;
            }
            double scale = 255.0 / (hi - lo);
            double offset = -lo * scale;
            for (int v = 0; v < 256; v++) {
                int ix = (int) (v * scale + offset); // Python's int(): toward zero
                lut[base + v] = (byte) Math.max(0, Math.min(255, ix));
            }
        }
        StokeAugment.lut(src, dst, pixels, lutSegment);
    }

    /** {@code F.equalize(img)}: ImageOps.equalize, each channel's histogram spread over 0..255. */
    public void equalize(MemorySegment src, MemorySegment dst, int width, int height) {
        long pixels = check(src, dst, width, height);
        StokeAugment.histogram(src, pixels, histogramSegment);
        for (int c = 0; c < 3; c++) {
            int base = 256 * c;
            long sum = 0;
            int used = 0;
            int last = 0;
            for (int v = 0; v < 256; v++) {
                int h = histogram[base + v];
                if (h != 0) {
                    sum += h;
                    used++;
                    last = h;
                }
            }
            long step = used <= 1 ? 0 : (sum - last) / 255;
            if (step == 0) {
                for (int v = 0; v < 256; v++) {
                    lut[base + v] = (byte) v;
                }
                continue;
            }
            long n = step / 2;
            for (int v = 0; v < 256; v++) {
                // PIL's table holds n // step unclipped; Image.point clips each entry to 0..255.
                lut[base + v] = (byte) Math.min(255, n / step);
                n += histogram[base + v];
            }
        }
        StokeAugment.lut(src, dst, pixels, lutSegment);
    }

    /** The first 256 entries of the table, for every channel (ImageOps' {@code lut * 3}). */
    private void applyOneTable(MemorySegment src, MemorySegment dst, int width, int height) {
        long pixels = check(src, dst, width, height);
        System.arraycopy(lut, 0, lut, 256, 256);
        System.arraycopy(lut, 0, lut, 512, 256);
        StokeAugment.lut(src, dst, pixels, lutSegment);
    }
}
