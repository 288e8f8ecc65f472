package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Stoke's PNG and WebP decoder ({@code native/pixels/stoke_image.h}), 1:1: libspng and libwebp
 * decoding into RGBX as PIL's {@code convert("RGB")} gives the pixels. Bundled like
 * {@link StokeJpeg}; it needs libspng0 and libwebp7 from the OS at run time.
 * {@code -Dstoke.image.path=FILE} names another build, {@code none} turns it off.
 */
public final class StokeImage {
    public static final int ABI_VERSION = 3;
    public static final String PATH_PROPERTY = "stoke.image.path";

    public static final int OK = 0;
    public static final int ERROR = -1;
    public static final int TRUNCATED = -2;
    public static final int TOO_LARGE = -3;
    public static final int UNSUPPORTED = -4;

    /** Indices into the info array the {@code *Info} calls fill. */
    public static final int INFO_WIDTH = 0;

    public static final int INFO_HEIGHT = 1;
    /** PNG: bits per sample; WebP: 8. */
    public static final int INFO_DEPTH = 2;
    /** PNG: colour type; WebP: 1 lossy, 2 lossless, 0 mixed. */
    public static final int INFO_KIND = 3;
    /** An alpha channel or a tRNS chunk: 1, else 0. */
    public static final int INFO_ALPHA = 4;

    public static final int INFO_FIELDS = 5;

    /** Indices into the region array {@link #webpDecodeRegionRgbx} fills. */
    public static final int REGION_LEFT = 0;

    public static final int REGION_TOP = 1;
    public static final int REGION_WIDTH = 2;
    public static final int REGION_HEIGHT = 3;
    public static final int REGION_FIELDS = 4;

    private static final BundledLibrary LIB = BundledLibrary.open(
            "Stoke's PNG and WebP decoder (libstoke_image.so, over libspng0 and libwebp7)",
            "libstoke_image.so",
            "UNAVAILABLE_IMAGE",
            PATH_PROPERTY,
            "stoke_image_abi_version",
            ABI_VERSION);
    private static final FunctionDescriptor INFO =
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT);
    private static final FunctionDescriptor DECODE =
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT);
    private static final MethodHandle PNG_INFO = handle("stoke_png_info", INFO);
    private static final MethodHandle PNG_DECODE = handle("stoke_png_decode_rgbx", DECODE);
    private static final MethodHandle PNG_ENCODE = handle(
            "stoke_png_encode_rgb",
            FunctionDescriptor.of(
                    JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT));
    private static final MethodHandle WEBP_INFO = handle("stoke_webp_info", INFO);
    private static final MethodHandle WEBP_DECODE = handle("stoke_webp_decode_rgbx", DECODE);
    private static final MethodHandle WEBP_DECODE_REGION = handle(
            "stoke_webp_decode_region_rgbx",
            FunctionDescriptor.of(
                    JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG,
                    ADDRESS, ADDRESS, JAVA_INT));

    private StokeImage() {}

    private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return LIB.downcall(name, descriptor);
    }

    public static boolean available() {
        return LIB.unavailable() == null;
    }

    /** Why the decoder is not loaded, in one sentence (naming the packages when a library is missing), or null. */
    public static String unavailableReason() {
        String why = LIB.unavailable();
        return why != null && why.contains("cannot open shared object file")
                ? why + " (install the OS's libspng0 and libwebp7: sudo apt-get install -y libspng0 libwebp7)"
                : why;
    }

    /** {@code stoke_png_info}: the header into {@code info} ({@link #INFO_FIELDS} ints); nothing decoded. */
    public static int pngInfo(
            MemorySegment png, long size, MemorySegment info, MemorySegment message, int messageBytes) {
        return call(PNG_INFO, png, size, info, message, messageBytes);
    }

    /** {@code stoke_png_decode_rgbx}: the whole image into {@code dst}, RGBX rows packed. */
    public static int pngDecodeRgbx(
            MemorySegment png,
            long size,
            long maxPixels,
            MemorySegment dst,
            long dstBytes,
            MemorySegment message,
            int messageBytes) {
        return call(PNG_DECODE, png, size, maxPixels, dst, dstBytes, message, messageBytes);
    }

    /**
     * {@code stoke_png_encode_rgb}: {@code width x height} RGB pixels, rows packed, as a lossless 8-bit
     * RGB PNG into {@code dst}, its length in {@code pngBytes[0]} (a long).
     */
    public static int pngEncodeRgb(
            MemorySegment rgb,
            int width,
            int height,
            MemorySegment dst,
            long dstBytes,
            MemorySegment pngBytes,
            MemorySegment message,
            int messageBytes) {
        if (PNG_ENCODE == null) {
            throw new IllegalStateException(LIB.unavailable());
        }
        try {
            return (int) PNG_ENCODE.invokeExact(rgb, width, height, dst, dstBytes, pngBytes, message, messageBytes);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code stoke_webp_info}: the header into {@code info} ({@link #INFO_FIELDS} ints); nothing decoded. */
    public static int webpInfo(
            MemorySegment webp, long size, MemorySegment info, MemorySegment message, int messageBytes) {
        return call(WEBP_INFO, webp, size, info, message, messageBytes);
    }

    /** {@code stoke_webp_decode_rgbx}: the whole image into {@code dst}, RGBX rows packed. */
    public static int webpDecodeRgbx(
            MemorySegment webp,
            long size,
            long maxPixels,
            MemorySegment dst,
            long dstBytes,
            MemorySegment message,
            int messageBytes) {
        return call(WEBP_DECODE, webp, size, maxPixels, dst, dstBytes, message, messageBytes);
    }

    /**
     * {@code stoke_webp_decode_region_rgbx}: at least the box {@code w x h + x + y}, with libwebp's
     * cropping, into {@code dst}; the region decoded (it may start a pixel before the box) in
     * {@code region} ({@link #REGION_FIELDS} ints).
     */
    public static int webpDecodeRegionRgbx(
            MemorySegment webp,
            long size,
            long maxPixels,
            int x,
            int y,
            int w,
            int h,
            MemorySegment dst,
            long dstBytes,
            MemorySegment region,
            MemorySegment message,
            int messageBytes) {
        if (WEBP_DECODE_REGION == null) {
            throw new IllegalStateException(LIB.unavailable());
        }
        try {
            return (int) WEBP_DECODE_REGION.invokeExact(
                    webp, size, maxPixels, x, y, w, h, dst, dstBytes, region, message, messageBytes);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    private static int call(
            MethodHandle h, MemorySegment data, long size, MemorySegment info, MemorySegment message, int bytes) {
        if (h == null) {
            throw new IllegalStateException(LIB.unavailable());
        }
        try {
            return (int) h.invokeExact(data, size, info, message, bytes);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    private static int call(
            MethodHandle h,
            MemorySegment data,
            long size,
            long maxPixels,
            MemorySegment dst,
            long dstBytes,
            MemorySegment message,
            int bytes) {
        if (h == null) {
            throw new IllegalStateException(LIB.unavailable());
        }
        try {
            return (int) h.invokeExact(data, size, maxPixels, dst, dstBytes, message, bytes);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }
}
