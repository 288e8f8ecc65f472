package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.NativeLibraries;
import io.stoke.ffm.NativeLibraryMissingException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.NoSuchElementException;

/**
 * nvJPEG ({@code libnvjpeg.so}), the subset a batched decode into device memory needs, through
 * {@code java.lang.foreign}: one Java method per C function, under its C name, returning the
 * {@code nvjpegStatus_t}; {@link #check} turns a failure into an {@link NvjpegException} naming the
 * call and the status. No policy: which backend to ask for, which image to send where and where
 * the library is found are the GPU module's ({@code io.stoke.gpu.GpuJpegDecoder}).
 *
 * <p>The declarations follow NVIDIA's documented API (nvjpeg.h of CUDA 11 to 13; this subset has
 * not changed since CUDA 11.0). A {@code cudaStream_t} is the driver's {@code CUstream}, so a
 * {@link CudaStream#handle()} is passed as it is. Handles ({@code nvjpegHandle_t},
 * {@code nvjpegJpegState_t}, {@code nvjpegJpegStream_t}) are {@link MemorySegment} addresses.
 *
 * <p>nvJPEG links the CUDA runtime statically and reaches the driver itself: loading it needs no GPU,
 * and {@code nvjpegGetProperty} answers without one; creating a handle needs a device.
 */
public final class Nvjpeg {
    // nvjpegStatus_t.
    public static final int NVJPEG_STATUS_SUCCESS = 0;
    public static final int NVJPEG_STATUS_NOT_INITIALIZED = 1;
    public static final int NVJPEG_STATUS_INVALID_PARAMETER = 2;
    public static final int NVJPEG_STATUS_BAD_JPEG = 3;
    public static final int NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4;
    public static final int NVJPEG_STATUS_ALLOCATOR_FAILURE = 5;
    public static final int NVJPEG_STATUS_EXECUTION_FAILED = 6;
    public static final int NVJPEG_STATUS_ARCH_MISMATCH = 7;
    public static final int NVJPEG_STATUS_INTERNAL_ERROR = 8;
    public static final int NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9;
    public static final int NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10;

    // nvjpegBackend_t.
    public static final int NVJPEG_BACKEND_DEFAULT = 0;
    public static final int NVJPEG_BACKEND_HYBRID = 1;
    public static final int NVJPEG_BACKEND_GPU_HYBRID = 2;
    public static final int NVJPEG_BACKEND_HARDWARE = 3;

    // nvjpegChromaSubsampling_t.
    public static final int NVJPEG_CSS_444 = 0;
    public static final int NVJPEG_CSS_422 = 1;
    public static final int NVJPEG_CSS_420 = 2;
    public static final int NVJPEG_CSS_440 = 3;
    public static final int NVJPEG_CSS_411 = 4;
    public static final int NVJPEG_CSS_410 = 5;
    public static final int NVJPEG_CSS_GRAY = 6;
    public static final int NVJPEG_CSS_410V = 7;
    public static final int NVJPEG_CSS_UNKNOWN = -1;

    // nvjpegOutputFormat_t: planar YCbCr, each component at its own (subsampled) size into channel[c],
    // is what Stoke asks for, converting to RGB itself; interleaved RGB into channel[0] where refused.
    public static final int NVJPEG_OUTPUT_YUV = 1;
    public static final int NVJPEG_OUTPUT_RGBI = 5;

    // libraryPropertyType (library_types.h).
    public static final int MAJOR_VERSION = 0;
    public static final int MINOR_VERSION = 1;
    public static final int PATCH_LEVEL = 2;

    /** {@code NVJPEG_MAX_COMPONENT}: the length of nvjpegImage_t's arrays and of nvjpegGetImageInfo's outputs. */
    public static final int MAX_COMPONENT = 4;

    /** {@code nvjpegImage_t}: {@code unsigned char *channel[4]; size_t pitch[4];} (64-bit builds only). */
    public static final MemoryLayout IMAGE = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(MAX_COMPONENT, ADDRESS).withName("channel"),
            MemoryLayout.sequenceLayout(MAX_COMPONENT, JAVA_LONG).withName("pitch"));

    /** Byte offset of {@code channel[0]} in an {@link #IMAGE}. */
    public static final long IMAGE_CHANNEL0 = 0;

    /** Byte offset of {@code pitch[0]} in an {@link #IMAGE}. */
    public static final long IMAGE_PITCH0 = MAX_COMPONENT * ADDRESS.byteSize();

    private static final String[] STATUS_NAMES = {
        "NVJPEG_STATUS_SUCCESS",
        "NVJPEG_STATUS_NOT_INITIALIZED",
        "NVJPEG_STATUS_INVALID_PARAMETER",
        "NVJPEG_STATUS_BAD_JPEG",
        "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
        "NVJPEG_STATUS_ALLOCATOR_FAILURE",
        "NVJPEG_STATUS_EXECUTION_FAILED",
        "NVJPEG_STATUS_ARCH_MISMATCH",
        "NVJPEG_STATUS_INTERNAL_ERROR",
        "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
        "NVJPEG_STATUS_INCOMPLETE_BITSTREAM"
    };

    private final String library;
    private final MethodHandle nvjpegGetProperty;
    private final MethodHandle nvjpegCreateEx;
    private final MethodHandle nvjpegDestroy;
    private final MethodHandle nvjpegJpegStateCreate;
    private final MethodHandle nvjpegJpegStateDestroy;
    private final MethodHandle nvjpegGetImageInfo;
    private final MethodHandle nvjpegJpegStreamCreate;
    private final MethodHandle nvjpegJpegStreamDestroy;
    private final MethodHandle nvjpegJpegStreamParse;
    private final MethodHandle nvjpegJpegStreamParseHeader;
    private final MethodHandle nvjpegDecodeBatchedSupported;
    private final MethodHandle nvjpegDecodeBatchedInitialize;
    private final MethodHandle nvjpegDecodeBatched;

    private Nvjpeg(String library, SymbolLookup lib) {
        this.library = library;
        nvjpegGetProperty =
                NativeLibraries.downcall(lib, "nvjpegGetProperty", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        nvjpegCreateEx = NativeLibraries.downcall(
                lib, "nvjpegCreateEx", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
        nvjpegDestroy = NativeLibraries.downcall(lib, "nvjpegDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        nvjpegJpegStateCreate = NativeLibraries.downcall(
                lib, "nvjpegJpegStateCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        nvjpegJpegStateDestroy =
                NativeLibraries.downcall(lib, "nvjpegJpegStateDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        nvjpegGetImageInfo = NativeLibraries.downcall(
                lib,
                "nvjpegGetImageInfo",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        nvjpegJpegStreamCreate = NativeLibraries.downcall(
                lib, "nvjpegJpegStreamCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        nvjpegJpegStreamDestroy =
                NativeLibraries.downcall(lib, "nvjpegJpegStreamDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        nvjpegJpegStreamParse = NativeLibraries.downcall(
                lib,
                "nvjpegJpegStreamParse",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS));
        nvjpegJpegStreamParseHeader = NativeLibraries.downcall(
                lib,
                "nvjpegJpegStreamParseHeader",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
        nvjpegDecodeBatchedSupported = NativeLibraries.downcall(
                lib, "nvjpegDecodeBatchedSupported", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        nvjpegDecodeBatchedInitialize = NativeLibraries.downcall(
                lib,
                "nvjpegDecodeBatchedInitialize",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT));
        nvjpegDecodeBatched = NativeLibraries.downcall(
                lib,
                "nvjpegDecodeBatched",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    }

    /**
     * Binds the nvJPEG at {@code library}, a path (or a soname on the library path).
     *
     * @throws NativeLibraryMissingException when there is no such library, saying so in one sentence
     * @throws IllegalArgumentException when the file is there but does not load, or lacks a function of
     *     the subset (an nvJPEG older than CUDA 11)
     */
    public static Nvjpeg load(String library) {
        SymbolLookup lib;
        try {
            lib = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException e) {
            if (Files.isRegularFile(Path.of(library))) {
                // There, but not a library this process can load (another architecture, a truncated copy).
                throw new IllegalArgumentException(library + " cannot be loaded: " + e.getMessage(), e);
            }
            throw new NativeLibraryMissingException(
                    "nvJPEG",
                    library,
                    "It comes with the CUDA toolkit (lib64/libnvjpeg.so.13), the nvidia-nvjpeg wheel and "
                            + "torchvision's CUDA wheels (torchvision.libs/); point STOKE_NVJPEG at it.",
                    e);
        }
        try {
            return new Nvjpeg(library, lib);
        } catch (NoSuchElementException e) {
            throw new IllegalArgumentException(
                    library + " lacks an nvJPEG function Stoke needs (" + e.getMessage()
                            + "); Stoke needs the nvJPEG of CUDA 11 or newer",
                    e);
        }
    }

    /** What was loaded: the path or soname. */
    public String library() {
        return library;
    }

    /** The {@code NVJPEG_STATUS_*} name of a status, or {@code "nvjpegStatus_t <n>"}. */
    public static String statusName(int status) {
        return status >= 0 && status < STATUS_NAMES.length ? STATUS_NAMES[status] : "nvjpegStatus_t " + status;
    }

    /** Throws {@link NvjpegException} naming {@code call} unless {@code status} is success. */
    public static void check(int status, String call) {
        if (status != NVJPEG_STATUS_SUCCESS) {
            throw new NvjpegException(call, status, statusName(status));
        }
    }

    /** The library's version as major.minor.patch, from {@code nvjpegGetProperty}; needs no GPU. */
    public String version() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            int[] parts = new int[3];
            int[] types = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
            for (int i = 0; i < 3; i++) {
                check(nvjpegGetProperty(types[i], out), "nvjpegGetProperty");
                parts[i] = out.get(JAVA_INT, 0);
            }
            return parts[0] + "." + parts[1] + "." + parts[2];
        }
    }

    // ------------------------------------------------------------------ raw bindings, one per C function

    public int nvjpegGetProperty(int type, MemorySegment value) {
        try {
            return (int) nvjpegGetProperty.invokeExact(type, value);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** {@code devAllocator} and {@code pinnedAllocator} NULL: CUDA's own allocators. */
    public int nvjpegCreateEx(
            int backend, MemorySegment devAllocator, MemorySegment pinnedAllocator, int flags, MemorySegment handle) {
        try {
            return (int) nvjpegCreateEx.invokeExact(backend, devAllocator, pinnedAllocator, flags, handle);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int nvjpegDestroy(MemorySegment handle) {
        try {
            return (int) nvjpegDestroy.invokeExact(handle);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int nvjpegJpegStateCreate(MemorySegment handle, MemorySegment state) {
        try {
            return (int) nvjpegJpegStateCreate.invokeExact(handle, state);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int nvjpegJpegStateDestroy(MemorySegment state) {
        try {
            return (int) nvjpegJpegStateDestroy.invokeExact(state);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /**
     * {@code widths} and {@code heights}: {@link #MAX_COMPONENT} ints each. {@code data} is the
     * file's address as the 64-bit value it is, as in {@link #nvjpegJpegStreamParse}: a batch's files
     * lie end to end in a few buffers, and a segment per file would be an object per image.
     */
    public int nvjpegGetImageInfo(
            MemorySegment handle,
            long data,
            long length,
            MemorySegment nComponents,
            MemorySegment subsampling,
            MemorySegment widths,
            MemorySegment heights) {
        try {
            return (int)
                    nvjpegGetImageInfo.invokeExact(handle, data, length, nComponents, subsampling, widths, heights);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int nvjpegJpegStreamCreate(MemorySegment handle, MemorySegment jpegStream) {
        try {
            return (int) nvjpegJpegStreamCreate.invokeExact(handle, jpegStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int nvjpegJpegStreamDestroy(MemorySegment jpegStream) {
        try {
            return (int) nvjpegJpegStreamDestroy.invokeExact(jpegStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** {@code data}: the file's address, as in {@link #nvjpegGetImageInfo}. */
    public int nvjpegJpegStreamParse(
            MemorySegment handle, long data, long length, int saveMetadata, int saveStream, MemorySegment jpegStream) {
        try {
            return (int) nvjpegJpegStreamParse.invokeExact(handle, data, length, saveMetadata, saveStream, jpegStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /**
     * The stream's headers only, up to its first scan: what {@link #nvjpegDecodeBatchedSupported}
     * needs, without reading the entropy-coded data as {@link #nvjpegJpegStreamParse} does. {@code
     * data}: the file's address, as in {@link #nvjpegGetImageInfo}.
     */
    public int nvjpegJpegStreamParseHeader(MemorySegment handle, long data, long length, MemorySegment jpegStream) {
        try {
            return (int) nvjpegJpegStreamParseHeader.invokeExact(handle, data, length, jpegStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** Writes 0 to {@code isSupported} where the handle's batched decode takes the parsed stream (nvJPEG's convention). */
    public int nvjpegDecodeBatchedSupported(MemorySegment handle, MemorySegment jpegStream, MemorySegment isSupported) {
        try {
            return (int) nvjpegDecodeBatchedSupported.invokeExact(handle, jpegStream, isSupported);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int nvjpegDecodeBatchedInitialize(
            MemorySegment handle, MemorySegment state, int batchSize, int maxCpuThreads, int outputFormat) {
        try {
            return (int)
                    nvjpegDecodeBatchedInitialize.invokeExact(handle, state, batchSize, maxCpuThreads, outputFormat);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /**
     * {@code data}: batch-size pointers; {@code lengths}: batch-size {@code size_t}; {@code destinations}:
     * batch-size {@link #IMAGE}s; {@code stream}: a {@code CUstream}. Asynchronous on the stream.
     */
    public int nvjpegDecodeBatched(
            MemorySegment handle,
            MemorySegment state,
            MemorySegment data,
            MemorySegment lengths,
            MemorySegment destinations,
            MemorySegment stream) {
        try {
            return (int) nvjpegDecodeBatched.invokeExact(handle, state, data, lengths, destinations, stream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }
}
