package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Stoke's region decoder ({@code native/pixels/stoke_jpeg.h}), 1:1: decodes only the rows and
 * columns of a JPEG that a crop keeps, over libjpeg-turbo's libjpeg API. Bundled like
 * {@link StokePixels}; {@code -Dstoke.jpeg.path=FILE} names another build, {@code none} turns it off.
 */
public final class StokeJpeg {
    public static final int ABI_VERSION = 2;
    public static final String PATH_PROPERTY = "stoke.jpeg.path";

    public static final int OK = 0;
    public static final int WARNING = 1;
    public static final int ERROR = -1;

    /** Indices into the region array {@link #decodeRegion} fills. */
    public static final int REGION_X = 0;

    public static final int REGION_Y = 1;
    public static final int REGION_WIDTH = 2;
    public static final int REGION_HEIGHT = 3;
    public static final int REGION_FIELDS = 4;

    private static final BundledLibrary LIB = BundledLibrary.open(
            "Stoke's region decoder",
            "libstoke_jpeg.so",
            "UNAVAILABLE_JPEG",
            PATH_PROPERTY,
            "stoke_jpeg_abi_version",
            ABI_VERSION);
    private static final MethodHandle DECODE = LIB.lookup() == null
            ? null
            : Linker.nativeLinker()
                    .downcallHandle(
                            LIB.lookup().findOrThrow("stoke_decode_region"),
                            FunctionDescriptor.of(
                                    JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                                    JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT));

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
     * the message as a NUL-terminated string in {@code message}.
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
                    dst,
                    dstBytes,
                    region,
                    message,
                    messageBytes);
        } catch (Throwable t) {
            if (t instanceof RuntimeException r) {
                throw r;
            }
            if (t instanceof Error e) {
                throw e;
            }
            throw new IllegalStateException(t);
        }
    }
}
