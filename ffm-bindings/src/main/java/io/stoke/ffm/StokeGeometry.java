package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The geometric ops of Stoke's pixel library ({@code native/pixels/stoke_geometry.h} says what each
 * does), 1:1, and the C library's {@code sin}, {@code cos}, {@code tan} and {@code atan}: CPython's
 * {@code math} module calls those, and Java's own differ from them in the last bit for some
 * arguments ({@code Math.tan} for about 1 in 250), which moves a pixel of a shear or a rotation.
 * The geometric ops come from the same file as {@link StokePixels} ({@code -Dstoke.pixels.path}
 * applies to both) under their own ABI version.
 *
 * <p>The functions trust their arguments: callers check every extent first. Array arguments may be
 * heap segments; the calls are short and never block, so they are linked as critical.
 */
public final class StokeGeometry {
    /** What the library must report from {@code stoke_geometry_abi_version}. */
    public static final int ABI_VERSION = 1;

    private static final Loaded LOADED = load();
    private static final MethodHandle SIN = libm("sin");
    private static final MethodHandle COS = libm("cos");
    private static final MethodHandle TAN = libm("tan");
    private static final MethodHandle ATAN = libm("atan");

    private record Loaded(MethodHandle affine, MethodHandle quarter, String unavailable) {}

    private StokeGeometry() {}

    /** Whether the library is loaded; if not, {@link #unavailableReason()} says why. */
    public static boolean available() {
        return LOADED.unavailable == null;
    }

    /** Why the library is not loaded, in one sentence, or null. */
    public static String unavailableReason() {
        return LOADED.unavailable;
    }

    /** {@code stoke_affine_rgb}. */
    public static void affineRgb(
            MemorySegment src,
            int width,
            int height,
            long srcRowBytes,
            MemorySegment dst,
            long dstRowBytes,
            MemorySegment matrix,
            int filter,
            MemorySegment fill) {
        try {
            LOADED.affine.invokeExact(src, width, height, srcRowBytes, dst, dstRowBytes, matrix, filter, fill);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_rotate_quarter_rgb}. */
    public static void rotateQuarterRgb(
            MemorySegment src,
            int width,
            int height,
            long srcRowBytes,
            MemorySegment dst,
            long dstRowBytes,
            int quarterTurns) {
        try {
            LOADED.quarter.invokeExact(src, width, height, srcRowBytes, dst, dstRowBytes, quarterTurns);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** The C library's {@code sin}. */
    public static double sin(double x) {
        try {
            return (double) SIN.invokeExact(x);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** The C library's {@code cos}. */
    public static double cos(double x) {
        try {
            return (double) COS.invokeExact(x);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** The C library's {@code tan}. */
    public static double tan(double x) {
        try {
            return (double) TAN.invokeExact(x);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** The C library's {@code atan}. */
    public static double atan(double x) {
        try {
            return (double) ATAN.invokeExact(x);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    private static MethodHandle libm(String name) {
        Linker linker = Linker.nativeLinker();
        SymbolLookup c = linker.defaultLookup();
        return linker.downcallHandle(
                c.findOrThrow(name), FunctionDescriptor.of(JAVA_DOUBLE, JAVA_DOUBLE), Linker.Option.critical(false));
    }

    private static Loaded load() {
        BundledLibrary lib = BundledLibrary.open(
                "Stoke's native geometric ops",
                "libstoke_pixels.so",
                "UNAVAILABLE",
                StokePixels.PATH_PROPERTY,
                "stoke_geometry_abi_version",
                ABI_VERSION);
        if (lib.unavailable() != null) {
            return new Loaded(null, null, lib.unavailable());
        }
        Linker linker = Linker.nativeLinker();
        Linker.Option critical = Linker.Option.critical(true);
        MethodHandle affine = linker.downcallHandle(
                lib.lookup().findOrThrow("stoke_affine_rgb"),
                FunctionDescriptor.ofVoid(
                        ADDRESS, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, ADDRESS),
                critical);
        MethodHandle quarter = linker.downcallHandle(
                lib.lookup().findOrThrow("stoke_rotate_quarter_rgb"),
                FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT),
                critical);
        return new Loaded(affine, quarter, null);
    }
}
