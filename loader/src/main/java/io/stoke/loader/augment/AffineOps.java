package io.stoke.loader.augment;

import io.stoke.ffm.StokeGeometry;
import java.lang.foreign.MemorySegment;

/**
 * The geometric ops of torchvision's auto-augment policies (its {@code _apply_op}, v1's and v2's
 * alike) as they run on a PIL image, byte for byte: ShearX/Y and TranslateX/Y through
 * {@code F.affine}, whose matrix torchvision computes in Python ({@code _get_inverse_affine_matrix})
 * before {@code Image.transform}, and Rotate through {@code F.rotate}, which is {@code Image.rotate}:
 * Pillow's own matrix, rounded to 15 decimals, or a transpose for its fast paths. The matrices are
 * computed here in the same double operations in the same order, with the C library's
 * trigonometry as CPython's {@code math} uses it; the pixels are Pillow's loops in C
 * ({@code native/pixels/stoke_geometry.c}).
 *
 * <p>Images are RGB, 3 bytes a pixel, {@code rowBytes} apart, in {@code src} and {@code dst} alike;
 * the output has the input's size and must not overlap it. {@code interpolation} is Pillow's
 * number: {@link #NEAREST} (the policies' default), {@link #BILINEAR} or {@link #BICUBIC}.
 * {@code fill} is the colour of what falls outside, {R, G, B} in 0..255, or null for black
 * (torchvision's {@code fill=None}). Every extent is checked here before the C code runs: a wrong
 * size throws and nothing is written. Each thread keeps its own 6-double matrix, so no call
 * allocates after a thread's first.
 */
public final class AffineOps {
    /** Pillow's {@code Resampling.NEAREST}. */
    public static final int NEAREST = 0;
    /** Pillow's {@code Resampling.BILINEAR}. */
    public static final int BILINEAR = 2;
    /** Pillow's {@code Resampling.BICUBIC}. */
    public static final int BICUBIC = 3;

    private static final double DEG_TO_RAD = Math.PI / 180.0; // CPython's math.radians
    private static final double RAD_TO_DEG = 180.0 / Math.PI; // CPython's math.degrees
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    /** One thread's matrix and fill colour, with the heap segments the C code reads them through. */
    private static final class Scratch {
        final double[] matrix = new double[6];
        final MemorySegment matrixSegment = MemorySegment.ofArray(matrix);
        final byte[] fill = new byte[3];
        final MemorySegment fillSegment = MemorySegment.ofArray(fill);
    }

    private AffineOps() {}

    /** Whether the native ops are there; if not, {@link #unavailableReason()} says why. */
    public static boolean available() {
        return StokeGeometry.available();
    }

    /** Why the native ops are not there, in one sentence, or null. */
    public static String unavailableReason() {
        return StokeGeometry.unavailableReason();
    }

    /** torchvision's ShearX of {@code magnitude} (signed): {@code F.affine(shear=[degrees(atan(m)), 0], center=[0, 0])}. */
    public static void shearX(
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            long rowBytes,
            double magnitude,
            int interpolation,
            int[] fill) {
        Scratch s = check(src, dst, width, height, rowBytes, magnitude, interpolation, fill);
        shearXMatrix(magnitude, s.matrix);
        StokeGeometry.affineRgb(
                src, width, height, rowBytes, dst, rowBytes, s.matrixSegment, interpolation, s.fillSegment);
    }

    /** torchvision's ShearY of {@code magnitude} (signed): {@code F.affine(shear=[0, degrees(atan(m))], center=[0, 0])}. */
    public static void shearY(
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            long rowBytes,
            double magnitude,
            int interpolation,
            int[] fill) {
        Scratch s = check(src, dst, width, height, rowBytes, magnitude, interpolation, fill);
        shearYMatrix(magnitude, s.matrix);
        StokeGeometry.affineRgb(
                src, width, height, rowBytes, dst, rowBytes, s.matrixSegment, interpolation, s.fillSegment);
    }

    /**
     * torchvision's TranslateX of {@code pixels} (the policy's signed magnitude, truncated toward
     * zero as torchvision's {@code int(magnitude)}): {@code F.affine(translate=[int(m), 0])}.
     */
    public static void translateX(
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            long rowBytes,
            double pixels,
            int interpolation,
            int[] fill) {
        Scratch s = check(src, dst, width, height, rowBytes, pixels, interpolation, fill);
        translateMatrix(width, height, (int) pixels, 0, s.matrix);
        StokeGeometry.affineRgb(
                src, width, height, rowBytes, dst, rowBytes, s.matrixSegment, interpolation, s.fillSegment);
    }

    /** torchvision's TranslateY of {@code pixels}, as {@link #translateX}: {@code F.affine(translate=[0, int(m)])}. */
    public static void translateY(
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            long rowBytes,
            double pixels,
            int interpolation,
            int[] fill) {
        Scratch s = check(src, dst, width, height, rowBytes, pixels, interpolation, fill);
        translateMatrix(width, height, 0, (int) pixels, s.matrix);
        StokeGeometry.affineRgb(
                src, width, height, rowBytes, dst, rowBytes, s.matrixSegment, interpolation, s.fillSegment);
    }

    /**
     * torchvision's Rotate of {@code degrees} counter-clockwise (signed): {@code F.rotate}, which is
     * {@code Image.rotate(degrees, resample, expand=False)}, fast paths included: 0 a copy, 180 a
     * transpose, and 90 or 270 a transpose where the image is square.
     */
    public static void rotate(
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            long rowBytes,
            double degrees,
            int interpolation,
            int[] fill) {
        Scratch s = check(src, dst, width, height, rowBytes, degrees, interpolation, fill);
        double angle = pythonMod360(degrees);
        int quarterTurns = quarterTurns(angle, width, height);
        if (quarterTurns >= 0) {
            StokeGeometry.rotateQuarterRgb(src, width, height, rowBytes, dst, rowBytes, quarterTurns);
            return;
        }
        rotateMatrix(width, height, angle, s.matrix);
        StokeGeometry.affineRgb(
                src, width, height, rowBytes, dst, rowBytes, s.matrixSegment, interpolation, s.fillSegment);
    }

    /**
     * Pillow's {@code Image.transform(size, AFFINE, matrix, interpolation, fillcolor=fill)} with the
     * output at the input's size, for a matrix of the caller's; package-private, for the test that
     * holds Pillow's paths to arbitrary matrices.
     */
    static void affine(
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            long rowBytes,
            double[] matrix,
            int interpolation,
            int[] fill) {
        Scratch s = check(src, dst, width, height, rowBytes, 0.0, interpolation, fill);
        for (int i = 0; i < 6; i++) {
            if (!Double.isFinite(matrix[i])) {
                throw new IllegalArgumentException("matrix value " + matrix[i] + " is not finite");
            }
            s.matrix[i] = matrix[i];
        }
        StokeGeometry.affineRgb(
                src, width, height, rowBytes, dst, rowBytes, s.matrixSegment, interpolation, s.fillSegment);
    }

    // The matrices, package-private for the test that holds them to Python's, bit for bit.

    static void shearXMatrix(double magnitude, double[] m) {
        inverseAffineMatrix(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, degrees(StokeGeometry.atan(magnitude)), 0.0, m);
    }

    static void shearYMatrix(double magnitude, double[] m) {
        inverseAffineMatrix(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, degrees(StokeGeometry.atan(magnitude)), m);
    }

    static void translateMatrix(int width, int height, int tx, int ty, double[] m) {
        inverseAffineMatrix(width * 0.5, height * 0.5, 0.0, tx, ty, 1.0, 0.0, 0.0, m);
    }

    /**
     * torchvision's {@code _get_inverse_affine_matrix(center, angle, translate, scale, shear)}, line
     * for line. Where torchvision's arguments are Python ints (the shears' center, the
     * translations) their values are exact here too, and a zero's sign cannot reach a pixel.
     */
    static void inverseAffineMatrix(
            double cx,
            double cy,
            double angle,
            double tx,
            double ty,
            double scale,
            double shearX,
            double shearY,
            double[] m) {
        double rot = radians(angle);
        double sx = radians(shearX);
        double sy = radians(shearY);
        double a = cos(rot - sy) / cos(sy);
        double b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot);
        double c = sin(rot - sy) / cos(sy);
        double d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot);
        m[0] = d / scale;
        m[1] = -b / scale;
        m[2] = 0.0 / scale;
        m[3] = -c / scale;
        m[4] = a / scale;
        m[5] = 0.0 / scale;
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
        m[2] += cx;
        m[5] += cy;
    }

    /**
     * Pillow's {@code Image.rotate} matrix for {@code angle} (already {@code % 360}), about the
     * centre {@code (w / 2, h / 2)}, with no translation or expansion.
     */
    static void rotateMatrix(int width, int height, double angle, double[] m) {
        double cx = width / 2.0;
        double cy = height / 2.0;
        double r = -radians(angle);
        double a = round15(cos(r));
        double b = round15(sin(r));
        double d = round15(-sin(r));
        double e = round15(cos(r));
        double x = -cx - 0;
        double y = -cy - 0;
        m[0] = a;
        m[1] = b;
        m[2] = a * x + b * y + 0.0;
        m[3] = d;
        m[4] = e;
        m[5] = d * x + e * y + 0.0;
        m[2] += cx;
        m[5] += cy;
    }

    /** {@code Image.rotate}'s fast path for {@code angle}: counter-clockwise quarter turns, or -1 for none. */
    static int quarterTurns(double angle, int width, int height) {
        if (angle == 0) {
            return 0;
        }
        if (angle == 180) {
            return 2;
        }
        if ((angle == 90 || angle == 270) && width == height) {
            return angle == 90 ? 1 : 3;
        }
        return -1;
    }

    /** Python's {@code x % 360.0}: the result takes the divisor's sign. */
    static double pythonMod360(double x) {
        double mod = x % 360.0;
        if (mod != 0) {
            if (mod < 0) {
                mod += 360.0;
            }
        } else {
            mod = 0.0;
        }
        return mod;
    }

    /**
     * Python's {@code round(v, 15)} for {@code |v| <= 1}: the exact value of {@code v * 10^15}
     * rounded half to even (its error term from a fused multiply-add), then divided by
     * {@code 10^15}, which one IEEE division rounds correctly, as CPython's decimal round trip does.
     */
    static double round15(double v) {
        double a = Math.abs(v);
        if (!(a <= 1.0)) {
            throw new IllegalArgumentException("round15 takes |v| <= 1, got " + v);
        }
        double p = a * 1e15;
        double err = Math.fma(a, 1e15, -p); // a * 1e15 == p + err exactly
        double n = Math.floor(p);
        // p - n is exact, and so is its difference from 0.5 (both under 1, multiples of ulp(p) or,
        // for p under 0.5, of no consequence); err is under half an ulp of p, so it decides only a tie.
        double above = (p - n) - 0.5 + err;
        if (above > 0 || (above == 0 && n % 2 != 0)) {
            n += 1;
        }
        return Math.copySign(n / 1e15, v);
    }

    static double radians(double x) {
        return x * DEG_TO_RAD;
    }

    static double degrees(double x) {
        return x * RAD_TO_DEG;
    }

    static double sin(double x) {
        return StokeGeometry.sin(x);
    }

    static double cos(double x) {
        return StokeGeometry.cos(x);
    }

    static double tan(double x) {
        return StokeGeometry.tan(x);
    }

    private static Scratch check(
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            long rowBytes,
            double magnitude,
            int interpolation,
            int[] fill) {
        if (!StokeGeometry.available()) {
            throw new IllegalStateException("the auto-augment geometric ops need " + StokeGeometry.unavailableReason());
        }
        if (width < 1 || height < 1) {
            throw new IllegalArgumentException("image of " + width + "x" + height + " pixels: both must be at least 1");
        }
        if (rowBytes < 3L * width) {
            throw new IllegalArgumentException(
                    "rows " + rowBytes + " bytes apart hold no " + width + " RGB pixels (" + 3L * width + " bytes)");
        }
        long need = Math.addExact(Math.multiplyExact(height - 1L, rowBytes), 3L * width);
        if (src.byteSize() < need || dst.byteSize() < need) {
            throw new IllegalArgumentException("a " + width + "x" + height + " RGB image, rows " + rowBytes
                    + " bytes apart, needs " + need + " bytes: the source has " + src.byteSize()
                    + ", the destination " + dst.byteSize());
        }
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("the destination is read-only");
        }
        if (src.asSlice(0, need).asOverlappingSlice(dst.asSlice(0, need)).isPresent()) {
            throw new IllegalArgumentException("the source and the destination overlap");
        }
        if (interpolation != NEAREST && interpolation != BILINEAR && interpolation != BICUBIC) {
            throw new IllegalArgumentException("interpolation " + interpolation
                    + " is not one of Pillow's NEAREST (0), BILINEAR (2) or BICUBIC (3)");
        }
        if (!Double.isFinite(magnitude)) {
            throw new IllegalArgumentException("magnitude " + magnitude + " is not finite");
        }
        Scratch s = SCRATCH.get();
        if (fill == null) {
            s.fill[0] = s.fill[1] = s.fill[2] = 0;
        } else {
            if (fill.length != 3) {
                throw new IllegalArgumentException("fill has " + fill.length + " values, an RGB image takes 3");
            }
            for (int i = 0; i < 3; i++) {
                if (fill[i] < 0 || fill[i] > 255) {
                    throw new IllegalArgumentException("fill value " + fill[i] + " is outside 0..255");
                }
                s.fill[i] = (byte) fill[i];
            }
        }
        return s;
    }
}
