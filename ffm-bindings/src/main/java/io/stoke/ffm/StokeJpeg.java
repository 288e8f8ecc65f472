package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Stoke's region decoder and restart-marker encoder ({@code native/pixels/stoke_jpeg.h}), 1:1:
 * decodes only the rows and columns of a JPEG that a crop keeps, seeking to its restart markers
 * where it has them, encodes JPEGs with restart markers, and gives a JPEG restart markers
 * losslessly, over libjpeg-turbo's libjpeg API.
 * Bundled like {@link StokePixels}; {@code -Dstoke.jpeg.path=FILE} names another build,
 * {@code none} turns it off.
 */
public final class StokeJpeg {
    public static final int ABI_VERSION = 5;
    public static final String PATH_PROPERTY = "stoke.jpeg.path";

    public static final int OK = 0;
    public static final int WARNING = 1;
    public static final int ERROR = -1;

    /** Indices into the region array {@link #decodeRegion} fills. */
    public static final int REGION_X = 0;

    public static final int REGION_Y = 1;
    public static final int REGION_WIDTH = 2;
    public static final int REGION_HEIGHT = 3;
    /** How the region was decoded: one of the {@code PATH_} values. */
    public static final int REGION_PATH = 4;

    public static final int REGION_FIELDS = 5;

    /** No usable restart markers (none, a progressive file, or a region that needs the whole image). */
    public static final int PATH_SEQUENTIAL = 0;
    /** Decoded from the restart segments that hold the region. */
    public static final int PATH_SEEKED = 1;
    /** The restart markers could not be trusted (the message says why): decoded sequentially. */
    public static final int PATH_FELL_BACK = 2;

    /** {@link #decodeRegion}'s flag: decode sequentially even where restart markers allow seeking. */
    public static final int NO_SEEK = 1;

    /** {@link #encodeRgb}'s subsampling, numbered as TurboJPEG's {@code TJSAMP_*}. */
    public static final int SAMP_444 = 0;

    public static final int SAMP_422 = 1;
    public static final int SAMP_420 = 2;
    public static final int SAMP_GRAY = 3;

    /** Indices into the info array {@link #addRestarts} fills. */
    public static final int RESTART_INTERVAL = 0;

    public static final int RESTART_MCUS_PER_ROW = 1;
    /** 1 when the original was progressive. */
    public static final int RESTART_PROGRESSIVE = 2;
    /** The original's own restart interval (0: none). */
    public static final int RESTART_HAD_MARKERS = 3;

    public static final int RESTART_FIELDS = 4;

    /** {@link #addRestarts}'s flag: write nothing ({@code jpegSize[0]} 0) for a sequential file that has markers already. */
    public static final int RESTART_UNLESS_SEEKABLE = 1;

    private static final BundledLibrary LIB = BundledLibrary.open(
            "Stoke's region decoder",
            "libstoke_jpeg.so",
            "UNAVAILABLE_JPEG",
            PATH_PROPERTY,
            "stoke_jpeg_abi_version",
            ABI_VERSION);
    private static final MethodHandle DECODE = LIB.downcall(
            "stoke_decode_region",
            FunctionDescriptor.of(
                    JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG,
                    JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT));

    /**
     * The writers ({@code stoke pack}, the restart cache), linked at their first call: each distinct
     * signature costs a fresh JVM several milliseconds to link, which a loader that only decodes
     * need not pay.
     */
    private static final class Writers {
        static final MethodHandle ENCODE = LIB.downcall(
                "stoke_encode_rgb",
                FunctionDescriptor.of(
                        JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS,
                        JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT));
        static final MethodHandle ADD_RESTARTS = LIB.downcall(
                "stoke_jpeg_add_restarts",
                FunctionDescriptor.of(
                        JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG,
                        ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
        static final MethodHandle ADD_RESTARTS_DECODING = LIB.downcall(
                "stoke_jpeg_add_restarts_decoding",
                FunctionDescriptor.of(
                        JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS,
                        ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG,
                        ADDRESS, ADDRESS, JAVA_INT));
    }

    private StokeJpeg() {}

    public static boolean available() {
        return LIB.unavailable() == null;
    }

    /** Why the decoder is not loaded, in one sentence, or null. */
    public static String unavailableReason() {
        return LIB.unavailable();
    }

    /**
     * {@code stoke_decode_region}: returns {@link #OK}, {@link #WARNING} or {@link #ERROR}, with
     * the message as a NUL-terminated string in {@code message}; {@code flags} 0 or
     * {@link #NO_SEEK}.
     */
    public static int decodeRegion(
            MemorySegment jpeg,
            long size,
            int scaleNum,
            int scaleDenom,
            int x,
            int y,
            int w,
            int h,
            long maxPixels,
            int maxScans,
            int flags,
            MemorySegment dst,
            long dstBytes,
            MemorySegment region,
            MemorySegment message,
            int messageBytes) {
        if (DECODE == null) {
            throw new IllegalStateException(LIB.unavailable());
        }
        try {
            return (int) DECODE.invokeExact(
                    jpeg,
                    size,
                    scaleNum,
                    scaleDenom,
                    x,
                    y,
                    w,
                    h,
                    maxPixels,
                    maxScans,
                    flags,
                    dst,
                    dstBytes,
                    region,
                    message,
                    messageBytes);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code stoke_encode_rgb}: encodes RGB pixels as tjCompress2 would, plus a restart marker every
     * {@code restartMcus} MCUs (0: none). Returns {@link #OK} with the length in
     * {@code jpegSize[0]}, or {@link #ERROR} with the message.
     */
    public static int encodeRgb(
            MemorySegment rgb,
            int width,
            int pitch,
            int height,
            int subsamp,
            int quality,
            int restartMcus,
            MemorySegment dst,
            long dstBytes,
            MemorySegment jpegSize,
            MemorySegment message,
            int messageBytes) {
        if (Writers.ENCODE == null) {
            throw new IllegalStateException(LIB.unavailable());
        }
        try {
            return (int) Writers.ENCODE.invokeExact(
                    rgb,
                    width,
                    pitch,
                    height,
                    subsamp,
                    quality,
                    restartMcus,
                    dst,
                    dstBytes,
                    jpegSize,
                    message,
                    messageBytes);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code stoke_jpeg_add_restarts}: rewrites a JPEG losslessly, sequential, with a restart
     * marker every interval MCUs (the divisor of its MCUs per row nearest {@code targetMcus}).
     * Returns {@link #OK} with the length in {@code jpegSize[0]} and {@link #RESTART_FIELDS} values
     * in {@code info}, or {@link #ERROR} with the message (the caller keeps the original); {@code
     * flags} 0 or {@link #RESTART_UNLESS_SEEKABLE}.
     */
    public static int addRestarts(
            MemorySegment jpeg,
            long size,
            int targetMcus,
            long maxPixels,
            int maxScans,
            int flags,
            MemorySegment dst,
            long dstBytes,
            MemorySegment jpegSize,
            MemorySegment info,
            MemorySegment message,
            int messageBytes) {
        if (Writers.ADD_RESTARTS == null) {
            throw new IllegalStateException(LIB.unavailable());
        }
        try {
            return (int) Writers.ADD_RESTARTS.invokeExact(
                    jpeg,
                    size,
                    targetMcus,
                    maxPixels,
                    maxScans,
                    flags,
                    dst,
                    dstBytes,
                    jpegSize,
                    info,
                    message,
                    messageBytes);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code stoke_jpeg_add_restarts_decoding}: {@link #addRestarts} and {@link #decodeRegion} of
     * the same file at once, its entropy-coded data decoded once. Returns {@link #OK} with the copy
     * in {@code copy} (its length in {@code copySize[0]}, {@code info} filled) and the region in
     * {@code dst} ({@code region} filled), each what the two calls would give; or {@link #ERROR}
     * with the message, when neither is to be used (the caller decodes the original alone).
     */
    public static int addRestartsDecoding(
            MemorySegment jpeg,
            long size,
            int targetMcus,
            long maxPixels,
            int maxScans,
            MemorySegment copy,
            long copyBytes,
            MemorySegment copySize,
            MemorySegment info,
            int scaleNum,
            int scaleDenom,
            int x,
            int y,
            int w,
            int h,
            MemorySegment dst,
            long dstBytes,
            MemorySegment region,
            MemorySegment message,
            int messageBytes) {
        if (Writers.ADD_RESTARTS_DECODING == null) {
            throw new IllegalStateException(LIB.unavailable());
        }
        try {
            return (int) Writers.ADD_RESTARTS_DECODING.invokeExact(
                    jpeg,
                    size,
                    targetMcus,
                    maxPixels,
                    maxScans,
                    copy,
                    copyBytes,
                    copySize,
                    info,
                    scaleNum,
                    scaleDenom,
                    x,
                    y,
                    w,
                    h,
                    dst,
                    dstBytes,
                    region,
                    message,
                    messageBytes);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }
}
