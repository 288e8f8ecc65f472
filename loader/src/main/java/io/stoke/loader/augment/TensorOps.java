package io.stoke.loader.augment;

import io.stoke.ffm.StokeAugment;
import io.stoke.ffm.StokeGeometry;
import java.lang.foreign.MemorySegment;

/**
 * torchvision's tensor kernels of the auto-augment ops, on uint8 RGB images (HWC, rows end to
 * end): what its {@code _apply_op} does to the uint8 tensor that AugMix makes of a PIL image
 * ({@code pil_to_tensor}), which is not what it does to the PIL image itself ({@link ColourOps},
 * {@link AffineOps}): the blends compute in float32 and truncate, AutoContrast scales in float32,
 * and the affine ops sample through an affine grid ({@code grid_sample}, align_corners=False),
 * rounding half to even. v1 ({@code transforms/_functional_tensor.py}) and v2
 * ({@code transforms/v2/functional}) differ in their float32 arithmetic, so each is followed. The
 * pixel loops are C ({@code native/pixels/stoke_tensor.c}); the tables torchvision computes in a
 * reduction or in Python (AutoContrast's scale, Equalize's, the mean grey, the affine matrix) are
 * computed here in the same float32 or double operations.
 *
 * <p>One per worker: its tables are allocated once, for one image size, and no call allocates.
 * Every extent is checked before the C code runs.
 */
public final class TensorOps implements AutoCloseable {
    private final int width;
    private final int height;
    private final long pixels;
    private final int[] histogram = new int[768];
    private final byte[] lut = new byte[768];
    private final MemorySegment histogramSegment = MemorySegment.ofArray(histogram);
    private final MemorySegment lutSegment = MemorySegment.ofArray(lut);
    private final double[] matrix = new double[6];
    private final float[] theta = new float[6];
    private final float[] fillValues = new float[3];
    private final MemorySegment thetaSegment = MemorySegment.ofArray(theta);
    private final MemorySegment fillSegment = MemorySegment.ofArray(fillValues);

    /** The kernels for {@code width x height} images; refuses where the C library is not built. */
    public TensorOps(int width, int height) {
        requireLibrary();
        if (width < 1 || height < 1) {
            throw new IllegalArgumentException("image of " + width + "x" + height);
        }
        this.width = width;
        this.height = height;
        this.pixels = (long) width * height;
    }

    /** Throws, in one sentence naming why, where the augmentation library is not loaded. */
    public static void requireLibrary() {
        if (!StokeAugment.available()) {
            throw new IllegalStateException("Stoke cannot augment images here: " + StokeAugment.unavailableReason());
        }
    }

    /**
     * torchvision's {@code _apply_op(img, op, magnitude, interpolation, fill)} on a uint8 tensor, as
     * torchvision v1 ({@code v2} false) or v2 ({@code _apply_image_or_video_transform}) runs it:
     * {@code magnitude} exactly as that version's AugMix passes it (signed; v2's Solarize a fraction
     * of 255); {@code interpolation} {@link AffineOps#NEAREST} or {@link AffineOps#BILINEAR}, the
     * two the tensor path has; {@code fill} null or one value per channel. {@code src} and
     * {@code dst} are distinct {@code width x height x 3} images.
     */
    public void apply(
            AugmentOp op,
            double magnitude,
            MemorySegment src,
            MemorySegment dst,
            int interpolation,
            double[] fill,
            boolean v2) {
        check(src, dst, interpolation, fill);
        switch (op) {
            case IDENTITY -> MemorySegment.copy(src, 0, dst, 0, 3 * pixels);
            case SHEAR_X, SHEAR_Y -> {
                // F.affine(shear=..., center=[0, 0]): the centre in torchvision's centred coordinates.
                double shear = AffineOps.degrees(StokeGeometry.atan(magnitude));
                double sx = op == AugmentOp.SHEAR_X ? shear : 0.0;
                double sy = op == AugmentOp.SHEAR_X ? 0.0 : shear;
                inverseAffineMatrix(v2, -(width * 0.5), -(height * 0.5), 0.0, 0.0, 0.0, sx, sy);
                affine(src, dst, interpolation, fill, v2);
            }
            case TRANSLATE_X, TRANSLATE_Y -> {
                int pixels = (int) magnitude; // Python's int(): toward zero
                int tx = op == AugmentOp.TRANSLATE_X ? pixels : 0;
                int ty = op == AugmentOp.TRANSLATE_X ? 0 : pixels;
                inverseAffineMatrix(v2, 0.0, 0.0, 0.0, tx, ty, 0.0, 0.0);
                affine(src, dst, interpolation, fill, v2);
            }
            case ROTATE -> rotate(src, dst, magnitude, interpolation, fill, v2);
            case BRIGHTNESS -> blend(src, dst, StokeAugment.TENSOR_BLACK, 0f, factor(op, magnitude), v2);
            case COLOR -> blend(src, dst, StokeAugment.TENSOR_GRAY, 0f, factor(op, magnitude), v2);
            case CONTRAST -> blend(src, dst, StokeAugment.TENSOR_FLAT, meanGrey(src, v2), factor(op, magnitude), v2);
            case SHARPNESS -> sharpness(src, dst, factor(op, magnitude), v2);
            case POSTERIZE -> posterize(src, dst, (int) magnitude);
            case SOLARIZE -> solarize(src, dst, v2 ? 255 * magnitude : magnitude);
            case AUTO_CONTRAST -> autoContrast(src, dst, v2);
            case EQUALIZE -> equalize(src, dst);
            case INVERT -> {
                for (int v = 0; v < 256; v++) {
                    lut[v] = (byte) (255 - v);
                }
                applyOneTable(src, dst);
            }
        }
    }

    /** Nothing native to free: the tables are on the heap. Present so that a worker closes what it made. */
    @Override
    public void close() {}

    private void check(MemorySegment src, MemorySegment dst, int interpolation, double[] fill) {
        long bytes = 3 * pixels;
        if (src.byteSize() < bytes || dst.byteSize() < bytes) {
            throw new IndexOutOfBoundsException("a " + width + "x" + height + " RGB image needs " + bytes
                    + " bytes; source " + src.byteSize() + ", destination " + dst.byteSize());
        }
        if (src.isNative() == dst.isNative()
                && src.address() < dst.address() + bytes
                && dst.address() < src.address() + bytes
                && (src.isNative() || src.heapBase().equals(dst.heapBase()))) {
            throw new IllegalArgumentException("source and destination overlap");
        }
        if (interpolation != AffineOps.NEAREST && interpolation != AffineOps.BILINEAR) {
            throw new IllegalArgumentException("interpolation " + interpolation + ": torchvision's tensor ops sample"
                    + " only NEAREST (" + AffineOps.NEAREST + ") or BILINEAR (" + AffineOps.BILINEAR
                    + "); BICUBIC and the others are PIL's alone");
        }
        if (fill != null) {
            if (fill.length != 3) {
                throw new IllegalArgumentException("fill has " + fill.length + " values for 3 channels");
            }
            for (double f : fill) {
                if (!(f >= 0 && f <= 255)) {
                    throw new IllegalArgumentException("fill value " + f + " is outside 0..255");
                }
            }
        }
    }

    /**
     * F.rotate: v1 samples every angle; v2 takes the angle {@code % 360} and copies or turns the
     * image for 0, 180, and 90 or 270 of a square one, as {@code rotate_image} does.
     */
    private void rotate(
            MemorySegment src, MemorySegment dst, double degrees, int interpolation, double[] fill, boolean v2) {
        double angle = degrees;
        if (v2) {
            angle = AffineOps.pythonMod360(degrees);
            int turns = AffineOps.quarterTurns(angle, width, height);
            if (turns == 0) {
                MemorySegment.copy(src, 0, dst, 0, 3 * pixels);
                return;
            }
            if (turns > 0) {
                StokeAugment.tensorRot90(src, dst, width, height, turns);
                return;
            }
        }
        // "due to current incoherence of rotation angle direction between affine and rotate": -angle.
        inverseAffineMatrix(v2, 0.0, 0.0, -angle, 0.0, 0.0, 0.0, 0.0);
        affine(src, dst, interpolation, fill, v2);
    }

    /**
     * _get_inverse_affine_matrix(center, angle, translate, 1.0, shear) into {@link #matrix}: v1's
     * ({@link AffineOps#inverseAffineMatrix}) or v2's, whose double arithmetic is ordered otherwise.
     */
    private void inverseAffineMatrix(
            boolean v2, double cx, double cy, double angle, double tx, double ty, double shearX, double shearY) {
        if (!v2) {
            AffineOps.inverseAffineMatrix(cx, cy, angle, tx, ty, 1.0, shearX, shearY, matrix);
            return;
        }
        double rot = AffineOps.radians(angle);
        double sx = AffineOps.radians(shearX);
        double sy = AffineOps.radians(shearY);
        double cosSy = AffineOps.cos(sy);
        double tanSx = AffineOps.tan(sx);
        double rotMinusSy = rot - sy;
        double cxPlusTx = cx + tx;
        double cyPlusTy = cy + ty;
        double a = AffineOps.cos(rotMinusSy) / cosSy;
        double b = -(a * tanSx + AffineOps.sin(rot));
        double c = AffineOps.sin(rotMinusSy) / cosSy;
        double d = AffineOps.cos(rot) - c * tanSx;
        matrix[0] = d / 1.0;
        matrix[1] = -b / 1.0;
        matrix[3] = -c / 1.0;
        matrix[4] = a / 1.0;
        matrix[2] = 0.0 + (cx - matrix[0] * cxPlusTx - matrix[1] * cyPlusTy);
        matrix[5] = 0.0 + (cy - matrix[3] * cxPlusTx - matrix[4] * cyPlusTy);
    }

    /**
     * The float32 theta of {@link #matrix}, divided as _gen_affine_grid divides it (by 0.5 * width
     * for the grid's x, 0.5 * height for its y), and the grid sampled in C.
     */
    private void affine(MemorySegment src, MemorySegment dst, int interpolation, double[] fill, boolean v2) {
        float halfW = (float) (0.5 * width);
        float halfH = (float) (0.5 * height);
        for (int i = 0; i < 3; i++) {
            theta[i] = (float) matrix[i] / halfW;
            theta[3 + i] = (float) matrix[3 + i] / halfH;
        }
        if (fill != null) {
            for (int c = 0; c < 3; c++) {
                fillValues[c] = (float) fill[c];
            }
        }
        StokeAugment.tensorAffine(
                src,
                dst,
                width,
                height,
                thetaSegment,
                interpolation == AffineOps.NEAREST ? StokeAugment.TENSOR_NEAREST : StokeAugment.TENSOR_BILINEAR,
                fill == null ? MemorySegment.NULL : fillSegment,
                v2);
    }

    /**
     * Contrast's {@code torch.mean} of the float32 grey: the exact sum over the pixel count in
     * float32, which is torch's while the sum stays below 2^24 (65,793 pixels of 255); package-private
     * for the test that compares it with torch's beyond.
     */
    float meanGrey(MemorySegment src, boolean v2) {
        return (float) StokeAugment.tensorGraySum(src, pixels, v2) / (float) pixels;
    }

    /** {@code 1.0 + magnitude}, the blends' factor, refused below 0 as torchvision refuses it. */
    private static double factor(AugmentOp op, double magnitude) {
        double f = 1.0 + magnitude;
        if (!(f >= 0)) {
            throw new IllegalArgumentException(op.torchvisionName() + " factor " + f + " is not non-negative");
        }
        return f;
    }

    private void blend(MemorySegment src, MemorySegment dst, int degenerate, float value, double factor, boolean v2) {
        StokeAugment.tensorBlend(src, dst, pixels, degenerate, value, (float) factor, (float) (1.0 - factor), v2);
    }

    private void sharpness(MemorySegment src, MemorySegment dst, double factor, boolean v2) {
        if (width <= 2 || height <= 2) {
            MemorySegment.copy(src, 0, dst, 0, 3 * pixels); // both versions return such an image as it is
            return;
        }
        StokeAugment.tensorSharpness(src, dst, width, height, (float) factor, (float) (1.0 - factor), v2);
    }

    /** v1's {@code img & -(2 ** (8 - bits))}, v2's {@code img & (((1 << bits) - 1) << (8 - bits))}: the same. */
    private void posterize(MemorySegment src, MemorySegment dst, int bits) {
        if (bits < 0 || bits > 8) {
            throw new IllegalArgumentException("Posterize keeps 0 to 8 bits, not " + bits);
        }
        int mask = 0xFF & ~((1 << (8 - bits)) - 1);
        for (int v = 0; v < 256; v++) {
            lut[v] = (byte) (v & mask);
        }
        applyOneTable(src, dst);
    }

    /** {@code torch.where(img >= threshold, 255 - img, img)}, the comparison in float32 (uint8 against a Python float). */
    private void solarize(MemorySegment src, MemorySegment dst, double threshold) {
        if (threshold > 255) {
            throw new IllegalArgumentException("Solarize threshold " + threshold + " is above 255");
        }
        float t = (float) threshold;
        for (int v = 0; v < 256; v++) {
            lut[v] = (byte) (v >= t ? 255 - v : v);
        }
        applyOneTable(src, dst);
    }

    /**
     * Each channel stretched from its min..max to 0..255 in float32, truncated: v1 as
     * {@code (x - min) * (255 / (max - min))}, where {@code 255 / t} is torch's
     * {@code t.reciprocal() * 255}; v2 as {@code (x - min) / ((max - min) * (1 / 255))}. A flat channel
     * is kept.
     */
    private void autoContrast(MemorySegment src, MemorySegment dst, boolean v2) {
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
            float min = lo;
            float range = (float) hi - min;
            float scale = (1.0f / range) * 255.0f;
            float inverse = range * (float) (1.0 / 255.0);
            for (int v = 0; v < 256; v++) {
                float out = v2 ? ((float) v - min) / inverse : ((float) v - min) * scale;
                lut[base + v] = (byte) (out <= 0 ? 0 : out >= 255 ? 255 : (int) out);
            }
        }
        StokeAugment.lut(src, dst, pixels, lutSegment);
    }

    /**
     * v1's {@code _scale_channel} and v2's {@code equalize_image}, which compute PIL's table: the
     * step is the count of the channel's pixels other than those of its highest value, over 255;
     * entry v is {@code (pixels below v + step // 2) // step}, clipped; a step of 0 keeps the channel.
     */
    private void equalize(MemorySegment src, MemorySegment dst) {
        StokeAugment.histogram(src, pixels, histogramSegment);
        for (int c = 0; c < 3; c++) {
            int base = 256 * c;
            int last = 255;
            while (last > 0 && histogram[base + last] == 0) {
                last--;
            }
            long step = (pixels - histogram[base + last]) / 255;
            long below = step / 2;
            for (int v = 0; v < 256; v++) {
                lut[base + v] = (byte) (step == 0 ? v : Math.min(255, below / step));
                below += histogram[base + v];
            }
        }
        StokeAugment.lut(src, dst, pixels, lutSegment);
    }

    /** The first 256 entries of the table, for every channel. */
    private void applyOneTable(MemorySegment src, MemorySegment dst) {
        System.arraycopy(lut, 0, lut, 256, 256);
        System.arraycopy(lut, 0, lut, 512, 256);
        StokeAugment.lut(src, dst, pixels, lutSegment);
    }
}
