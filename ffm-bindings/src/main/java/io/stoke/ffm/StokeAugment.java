package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Stoke's colour operations of the auto-augment policies ({@code native/pixels/stoke_augment.h},
 * whose header says what each function does), and torchvision's tensor kernels of the same ops
 * ({@code native/pixels/stoke_tensor.h}, AugMix's), 1:1. Bundled like {@link StokePixels}, in a library
 * of its own so that a build without it only refuses augmentation. {@code -Dstoke.augment.path=FILE}
 * names another build, {@code none} turns it off.
 *
 * <p>The functions trust their arguments: callers check every extent first. They are short and
 * never block, so they are linked as critical and read heap arrays in place.
 */
public final class StokeAugment {
    /** What the library must report from {@code stoke_augment_abi_version}. */
    public static final int ABI_VERSION = 4;
    /** The system property that names the library's file, or {@code none}. */
    public static final String PATH_PROPERTY = "stoke.augment.path";

    /** {@code STOKE_DEGENERATE_BLACK}: Brightness's black image. */
    public static final int DEGENERATE_BLACK = 0;
    /** {@code STOKE_DEGENERATE_GRAY}: Color's grey version of the image. */
    public static final int DEGENERATE_GRAY = 1;
    /** {@code STOKE_DEGENERATE_FLAT}: Contrast's flat grey. */
    public static final int DEGENERATE_FLAT = 2;

    /** {@code STOKE_TENSOR_BLACK}: Brightness's zeros. */
    public static final int TENSOR_BLACK = 0;
    /** {@code STOKE_TENSOR_GRAY}: Color's grey of each pixel. */
    public static final int TENSOR_GRAY = 1;
    /** {@code STOKE_TENSOR_FLAT}: Contrast's mean grey. */
    public static final int TENSOR_FLAT = 2;
    /** {@code STOKE_TENSOR_NEAREST}. */
    public static final int TENSOR_NEAREST = 0;
    /** {@code STOKE_TENSOR_BILINEAR}. */
    public static final int TENSOR_BILINEAR = 1;

    private static final BundledLibrary LIB = BundledLibrary.open(
            "Stoke's augmentation library (libstoke_augment.so)",
            "libstoke_augment.so",
            "UNAVAILABLE_AUGMENT",
            PATH_PROPERTY,
            "stoke_augment_abi_version",
            ABI_VERSION);
    private static final MethodHandle BLEND = handle(
            "stoke_augment_blend",
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_FLOAT));
    private static final MethodHandle SHARPNESS = handle(
            "stoke_augment_sharpness", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_FLOAT));
    private static final MethodHandle HISTOGRAM =
            handle("stoke_augment_histogram", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
    private static final MethodHandle GRAY_SUM =
            handle("stoke_augment_gray_sum", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG));
    private static final MethodHandle LUT =
            handle("stoke_augment_lut", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));

    /**
     * torchvision's tensor kernels of the ops (AugMix's, and a tensor pipeline's), linked at their
     * first call: each distinct signature costs a fresh JVM several milliseconds to link, which a
     * pipeline that augments only as on a PIL image need not pay.
     */
    private static final class Tensors {
        static final MethodHandle TENSOR_BLEND = handle(
                "stoke_tensor_blend",
                FunctionDescriptor.ofVoid(
                        ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_FLOAT, JAVA_FLOAT, JAVA_FLOAT, JAVA_INT));
        static final MethodHandle TENSOR_GRAY_SUM =
                handle("stoke_tensor_gray_sum", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT));
        static final MethodHandle TENSOR_SHARPNESS = handle(
                "stoke_tensor_sharpness",
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_FLOAT, JAVA_FLOAT, JAVA_INT));
        static final MethodHandle TENSOR_AFFINE = handle(
                "stoke_tensor_affine",
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle TENSOR_ROT90 =
                handle("stoke_tensor_rot90", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT));
    }

    /** AugMix's mix, linked at its first call (only AugMix runs it). */
    private static final class Mix {
        static final MethodHandle MIX_START =
                handle("stoke_tensor_mix_start", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG, JAVA_FLOAT));
        static final MethodHandle MIX_ADD =
                handle("stoke_tensor_mix_add", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG, JAVA_FLOAT));
        static final MethodHandle MIX_FINISH =
                handle("stoke_tensor_mix_finish", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG));
    }

    /** ColorJitter's hue, linked at its first call (only a jitter with a hue range runs it). */
    private static final class Hue {
        static final MethodHandle HUE =
                handle("stoke_augment_hue", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
    }

    private StokeAugment() {}

    private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return LIB.downcall(name, descriptor, Linker.Option.critical(true));
    }

    /** Whether the library is loaded; if not, {@link #unavailableReason()} says why. */
    public static boolean available() {
        return LIB.unavailable() == null;
    }

    /** Why the library is not loaded, in one sentence, or null. */
    public static String unavailableReason() {
        return LIB.unavailable();
    }

    /** {@code stoke_augment_blend}. */
    public static void blend(
            MemorySegment src, MemorySegment dst, long pixels, int degenerate, int value, float alpha) {
        try {
            BLEND.invokeExact(src, dst, pixels, degenerate, value, alpha);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_augment_hue}. */
    public static void hue(MemorySegment src, MemorySegment dst, long pixels, int shift) {
        try {
            Hue.HUE.invokeExact(src, dst, pixels, shift);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_augment_sharpness}. */
    public static void sharpness(MemorySegment src, MemorySegment dst, int width, int height, float alpha) {
        try {
            SHARPNESS.invokeExact(src, dst, width, height, alpha);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_augment_histogram}. */
    public static void histogram(MemorySegment src, long pixels, MemorySegment hist) {
        try {
            HISTOGRAM.invokeExact(src, pixels, hist);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_augment_gray_sum}. */
    public static long graySum(MemorySegment src, long pixels) {
        try {
            return (long) GRAY_SUM.invokeExact(src, pixels);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_augment_lut}. */
    public static void lut(MemorySegment src, MemorySegment dst, long pixels, MemorySegment lut) {
        try {
            LUT.invokeExact(src, dst, pixels, lut);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_tensor_blend}. */
    public static void tensorBlend(
            MemorySegment src,
            MemorySegment dst,
            long pixels,
            int degenerate,
            float value,
            float ratio,
            float rest,
            boolean v2) {
        try {
            Tensors.TENSOR_BLEND.invokeExact(src, dst, pixels, degenerate, value, ratio, rest, v2 ? 1 : 0);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_tensor_gray_sum}. */
    public static long tensorGraySum(MemorySegment src, long pixels, boolean v2) {
        try {
            return (long) Tensors.TENSOR_GRAY_SUM.invokeExact(src, pixels, v2 ? 1 : 0);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_tensor_sharpness}. */
    public static void tensorSharpness(
            MemorySegment src, MemorySegment dst, int width, int height, float ratio, float rest, boolean v2) {
        try {
            Tensors.TENSOR_SHARPNESS.invokeExact(src, dst, width, height, ratio, rest, v2 ? 1 : 0);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_tensor_affine}; {@code fill} is {@link MemorySegment#NULL} for none. */
    public static void tensorAffine(
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            MemorySegment theta,
            int mode,
            MemorySegment fill,
            boolean v2) {
        try {
            Tensors.TENSOR_AFFINE.invokeExact(src, dst, width, height, theta, mode, fill, v2 ? 1 : 0);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_tensor_rot90}. */
    public static void tensorRot90(MemorySegment src, MemorySegment dst, int width, int height, int k) {
        try {
            Tensors.TENSOR_ROT90.invokeExact(src, dst, width, height, k);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_tensor_mix_start}: {@code values} floats of {@code mix} from as many bytes of {@code src}. */
    public static void tensorMixStart(MemorySegment src, MemorySegment mix, long values, float weight) {
        try {
            Mix.MIX_START.invokeExact(src, mix, values, weight);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_tensor_mix_add}. */
    public static void tensorMixAdd(MemorySegment src, MemorySegment mix, long values, float weight) {
        try {
            Mix.MIX_ADD.invokeExact(src, mix, values, weight);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_tensor_mix_finish}. */
    public static void tensorMixFinish(MemorySegment mix, MemorySegment dst, long values) {
        try {
            Mix.MIX_FINISH.invokeExact(mix, dst, values);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }
}
