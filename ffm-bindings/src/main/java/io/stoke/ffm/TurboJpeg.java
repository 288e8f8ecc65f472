package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The TurboJPEG 2.x C API of libjpeg-turbo ({@code libturbojpeg.so.0}), one Java method per C
 * function. Constants carry the C names. Policy (which scale, which bounds) lives in the loader;
 * the safe per-thread faces are {@link JpegDecompressor} and {@link JpegCompressor}.
 *
 * <p>A {@code tjhandle} is not thread-safe: each thread owns its own.
 */
public final class TurboJpeg {
    public static final String INSTALL_HINT =
            "Install it with: sudo apt-get install -y libturbojpeg0   (Debian/Ubuntu), "
                    + "or point -Dstoke.turbojpeg.path at libturbojpeg.so.0.";

    // Pixel formats (enum TJPF).
    public static final int TJPF_RGB = 0;
    public static final int TJPF_BGR = 1;
    public static final int TJPF_RGBX = 2;
    public static final int TJPF_GRAY = 6;
    public static final int TJPF_CMYK = 11;

    // Chroma subsampling (enum TJSAMP).
    public static final int TJSAMP_444 = 0;
    public static final int TJSAMP_422 = 1;
    public static final int TJSAMP_420 = 2;
    public static final int TJSAMP_GRAY = 3;
    public static final int TJSAMP_440 = 4;
    public static final int TJSAMP_411 = 5;

    // Colorspaces (enum TJCS).
    public static final int TJCS_RGB = 0;
    public static final int TJCS_YCbCr = 1;
    public static final int TJCS_GRAY = 2;
    public static final int TJCS_CMYK = 3;
    public static final int TJCS_YCCK = 4;

    // Flags.
    public static final int TJFLAG_BOTTOMUP = 2;
    public static final int TJFLAG_FASTUPSAMPLE = 256;
    public static final int TJFLAG_NOREALLOC = 1024;
    public static final int TJFLAG_FASTDCT = 2048;
    public static final int TJFLAG_ACCURATEDCT = 4096;
    public static final int TJFLAG_STOPONWARNING = 8192;
    public static final int TJFLAG_PROGRESSIVE = 16384;
    /** Refuses progressive files with more than 500 scans: the classic progressive decompression bomb. */
    public static final int TJFLAG_LIMITSCANS = 32768;

    // Error codes (enum TJERR).
    public static final int TJERR_WARNING = 0;
    public static final int TJERR_FATAL = 1;

    /**
     * The decompressor's functions, linked when the first is called. Each distinct signature costs
     * a fresh JVM several milliseconds to link (a class spun for its stub), so the compressor's are
     * in their own holder: a loader that only decodes never links them.
     */
    private static final class Handles {
        static final SymbolLookup LIB;
        static final MethodHandle INIT_DECOMPRESS;
        static final MethodHandle DESTROY;
        static final MethodHandle DECOMPRESS_HEADER3;
        static final MethodHandle DECOMPRESS2;
        static final MethodHandle GET_SCALING_FACTORS;
        static final MethodHandle GET_ERROR_STR2;
        static final MethodHandle GET_ERROR_CODE;

        static {
            LIB = NativeLibraries.open(
                    "libturbojpeg", "stoke.turbojpeg.path", INSTALL_HINT, "libturbojpeg.so.0", "libturbojpeg.so");
            INIT_DECOMPRESS = NativeLibraries.downcall(LIB, "tjInitDecompress", FunctionDescriptor.of(ADDRESS));
            DESTROY = NativeLibraries.downcall(LIB, "tjDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            DECOMPRESS_HEADER3 = NativeLibraries.downcall(
                    LIB,
                    "tjDecompressHeader3",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
            DECOMPRESS2 = NativeLibraries.downcall(
                    LIB,
                    "tjDecompress2",
                    FunctionDescriptor.of(
                            JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                            JAVA_INT));
            GET_SCALING_FACTORS =
                    NativeLibraries.downcall(LIB, "tjGetScalingFactors", FunctionDescriptor.of(ADDRESS, ADDRESS));
            GET_ERROR_STR2 = NativeLibraries.downcall(LIB, "tjGetErrorStr2", FunctionDescriptor.of(ADDRESS, ADDRESS));
            GET_ERROR_CODE = NativeLibraries.downcall(LIB, "tjGetErrorCode", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        }
    }

    /** The compressor's functions (stoke pack, the test data), linked when the first is called. */
    private static final class CompressHandles {
        static final MethodHandle INIT_COMPRESS =
                NativeLibraries.downcall(Handles.LIB, "tjInitCompress", FunctionDescriptor.of(ADDRESS));
        static final MethodHandle COMPRESS2 = NativeLibraries.downcall(
                Handles.LIB,
                "tjCompress2",
                FunctionDescriptor.of(
                        JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
                        JAVA_INT, JAVA_INT));
        static final MethodHandle BUF_SIZE = NativeLibraries.downcall(
                Handles.LIB, "tjBufSize", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT));
    }

    private TurboJpeg() {}

    /**
     * Loads libturbojpeg now, so that a missing install is reported at start-up.
     *
     * @throws NativeLibraryMissingException with the install command, when it is not installed
     */
    public static void ensureLoaded() {
        try {
            Handles.INIT_DECOMPRESS.type();
        } catch (ExceptionInInitializerError e) {
            if (e.getCause() instanceof NativeLibraryMissingException missing) {
                throw missing;
            }
            throw e;
        } catch (NoClassDefFoundError e) {
            // The holder failed once already; load again to recover the readable cause.
            throw new NativeLibraryMissingException("libturbojpeg", "libturbojpeg.so.0", INSTALL_HINT, e);
        }
    }

    /** Bytes per pixel of a {@code TJPF_*} format. */
    public static int pixelSize(int pixelFormat) {
        return switch (pixelFormat) {
            case TJPF_RGB, TJPF_BGR -> 3;
            case TJPF_GRAY -> 1;
            case TJPF_RGBX, 3, 4, 5, 7, 8, 9, 10, TJPF_CMYK -> 4;
            default -> throw new IllegalArgumentException("unknown pixel format " + pixelFormat);
        };
    }

    /** {@code TJSCALED(dimension, factor)}: the size of one side after DCT scaling by num/denom. */
    public static int scaled(int dimension, int num, int denom) {
        return (int) (((long) dimension * num + denom - 1) / denom);
    }

    public static MemorySegment tjInitDecompress() {
        try {
            return (MemorySegment) Handles.INIT_DECOMPRESS.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static MemorySegment tjInitCompress() {
        try {
            return (MemorySegment) CompressHandles.INIT_COMPRESS.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int tjDestroy(MemorySegment handle) {
        try {
            return (int) Handles.DESTROY.invokeExact(handle);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int tjDecompressHeader3(
            MemorySegment handle,
            MemorySegment jpegBuf,
            long jpegSize,
            MemorySegment width,
            MemorySegment height,
            MemorySegment subsamp,
            MemorySegment colorspace) {
        try {
            return (int) Handles.DECOMPRESS_HEADER3.invokeExact(
                    handle, jpegBuf, jpegSize, width, height, subsamp, colorspace);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int tjDecompress2(
            MemorySegment handle,
            MemorySegment jpegBuf,
            long jpegSize,
            MemorySegment dstBuf,
            int width,
            int pitch,
            int height,
            int pixelFormat,
            int flags) {
        try {
            return (int) Handles.DECOMPRESS2.invokeExact(
                    handle, jpegBuf, jpegSize, dstBuf, width, pitch, height, pixelFormat, flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int tjCompress2(
            MemorySegment handle,
            MemorySegment srcBuf,
            int width,
            int pitch,
            int height,
            int pixelFormat,
            MemorySegment jpegBufPtr,
            MemorySegment jpegSizePtr,
            int subsamp,
            int quality,
            int flags) {
        try {
            return (int) CompressHandles.COMPRESS2.invokeExact(
                    handle,
                    srcBuf,
                    width,
                    pitch,
                    height,
                    pixelFormat,
                    jpegBufPtr,
                    jpegSizePtr,
                    subsamp,
                    quality,
                    flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static long tjBufSize(int width, int height, int subsamp) {
        try {
            return (long) CompressHandles.BUF_SIZE.invokeExact(width, height, subsamp);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Returns a pointer to a static array of {@code tjscalingfactor {int num; int denom;}}. */
    public static MemorySegment tjGetScalingFactors(MemorySegment count) {
        try {
            return (MemorySegment) Handles.GET_SCALING_FACTORS.invokeExact(count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static MemorySegment tjGetErrorStr2(MemorySegment handle) {
        try {
            return (MemorySegment) Handles.GET_ERROR_STR2.invokeExact(handle);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int tjGetErrorCode(MemorySegment handle) {
        try {
            return (int) Handles.GET_ERROR_CODE.invokeExact(handle);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static RuntimeException rethrow(Throwable t) {
        return NativeLibraries.rethrow(t);
    }
}
