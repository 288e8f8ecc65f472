package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Stoke's own C library, {@code native/pixels} (its header says what each function does), 1:1.
 * The build compiles it into this module's classes folder, so the jar carries it; it is copied
 * to a temporary file and opened once per JVM. {@code -Dstoke.pixels.path=FILE} names another
 * file; {@code -Dstoke.pixels.path=none} turns it off.
 *
 * <p>The functions trust their arguments: callers check every extent first. Array arguments may
 * be heap segments ({@code MemorySegment.ofArray}): the calls are short and never block, so they
 * are linked as critical and read the arrays in place.
 */
public final class StokePixels {
    /** What the library must report from {@code stoke_pixels_abi_version}. */
    public static final int ABI_VERSION = 3;
    /** The system property that names the library's file, or {@code none}. */
    public static final String PATH_PROPERTY = "stoke.pixels.path";

    private static final BundledLibrary LIB = BundledLibrary.open(
            "Stoke's native pixel library",
            "libstoke_pixels.so",
            "UNAVAILABLE",
            PATH_PROPERTY,
            "stoke_pixels_abi_version",
            ABI_VERSION);
    private static final MethodHandle HORIZONTAL = link(
            "stoke_resample_horizontal",
            FunctionDescriptor.ofVoid(
                    ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));

    /**
     * The uint8 output's functions, and below the float32 output's, each linked at the first call
     * of one: each distinct signature costs a fresh JVM several milliseconds to link, and a run
     * writes one of the two (float32 after a uint8 augmentation writes both).
     */
    private static final class Bytes {
        static final MethodHandle VERTICAL = link(
                "stoke_resample_vertical_rgb",
                FunctionDescriptor.ofVoid(
                        ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
                        JAVA_LONG));
        static final MethodHandle STORE = link(
                "stoke_store_rgb",
                FunctionDescriptor.ofVoid(
                        ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG));
    }

    private static final class Floats {
        static final MethodHandle VERTICAL = link(
                "stoke_resample_vertical_f32",
                FunctionDescriptor.ofVoid(
                        ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS,
                        JAVA_LONG));
        static final MethodHandle STORE = link(
                "stoke_store_f32",
                FunctionDescriptor.ofVoid(
                        ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
    }

    private StokePixels() {}

    /** Whether the library is loaded; if not, {@link #unavailableReason()} says why. */
    public static boolean available() {
        return LIB.unavailable() == null;
    }

    /** Why the library is not loaded, in one sentence, or null. */
    public static String unavailableReason() {
        return LIB.unavailable();
    }

    /** {@code stoke_resample_horizontal}. */
    public static void resampleHorizontal(
            MemorySegment src,
            long srcRowBytes,
            int yFirst,
            int rows,
            int outWidth,
            MemorySegment bounds,
            MemorySegment weights,
            int taps,
            MemorySegment tmp) {
        try {
            HORIZONTAL.invokeExact(src, srcRowBytes, yFirst, rows, outWidth, bounds, weights, taps, tmp);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_resample_vertical_rgb}. */
    public static void resampleVerticalRgb(
            MemorySegment tmp,
            int width,
            int yFirst,
            int outRows,
            MemorySegment bounds,
            MemorySegment weights,
            int taps,
            MemorySegment acc,
            MemorySegment dst,
            long dstOffset) {
        try {
            Bytes.VERTICAL.invokeExact(tmp, width, yFirst, outRows, bounds, weights, taps, acc, dst, dstOffset);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_resample_vertical_f32}. */
    public static void resampleVerticalFloat(
            MemorySegment tmp,
            int width,
            int yFirst,
            int outRows,
            MemorySegment bounds,
            MemorySegment weights,
            int taps,
            MemorySegment acc,
            MemorySegment table,
            MemorySegment dst,
            long dstOffset) {
        try {
            Floats.VERTICAL.invokeExact(tmp, width, yFirst, outRows, bounds, weights, taps, acc, table, dst, dstOffset);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_store_rgb}. */
    public static void storeRgb(
            MemorySegment src,
            long srcOffset,
            long srcRowBytes,
            int pixelBytes,
            int width,
            int rows,
            MemorySegment dst,
            long dstOffset) {
        try {
            Bytes.STORE.invokeExact(src, srcOffset, srcRowBytes, pixelBytes, width, rows, dst, dstOffset);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_store_f32}. */
    public static void storeFloat(
            MemorySegment src,
            long srcOffset,
            long srcRowBytes,
            int pixelBytes,
            int width,
            int rows,
            MemorySegment table,
            MemorySegment dst,
            long dstOffset) {
        try {
            Floats.STORE.invokeExact(src, srcOffset, srcRowBytes, pixelBytes, width, rows, table, dst, dstOffset);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code name}, linked as critical; null where the library is not loaded (callers check {@link #available}). */
    private static MethodHandle link(String name, FunctionDescriptor descriptor) {
        return LIB.downcall(name, descriptor, Linker.Option.critical(true));
    }
}
