package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.NativeLibraries;
import io.stoke.ffm.NativeLibraryMissingException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;

/**
 * The CUDA driver API ({@code libcuda.so.1}) through {@code java.lang.foreign}: one Java method
 * per C function, named by the exact symbol that {@code cuda.h} (CUDA 13) maps the API name to,
 * so {@code cuMemAlloc} is bound as {@link #cuMemAlloc_v2}. The raw methods return the
 * {@code CUresult}; {@link #check} turns a failure into a {@link CudaException} that says which call
 * failed and why. Safe, owning faces: {@link CudaContext}, {@link CudaStream}, {@link CudaEvent},
 * {@link DeviceBuffer}, {@link HostRegistration}, {@link PinnedHostMemory}, {@link CudaModule}.
 *
 * <p>Unlike the TurboJPEG binding this is an object, not static methods: a machine without a GPU is
 * normal, so callers {@link #tryLoad() try} to load it and carry on without it, and tests load a
 * test double in its place (several libraries, one per instance).
 *
 * <p>Handle types: {@code CUdevice} is an {@code int}, {@code CUdeviceptr} a {@code long} (64-bit
 * builds only), every other handle ({@code CUcontext}, {@code CUstream}, {@code CUevent},
 * {@code CUmodule}, {@code CUfunction}) a {@link MemorySegment} address.
 */
public final class CudaDriver {
    /** System property naming the driver library to load instead of {@code libcuda.so.1}. */
    public static final String PATH_PROPERTY = "stoke.cuda.path";

    public static final String SONAME = "libcuda.so.1";
    public static final String INSTALL_HINT =
            "No NVIDIA driver is installed on this machine (libcuda.so.1 comes with the driver, not with the "
                    + "CUDA toolkit). Install the NVIDIA driver, or point -D" + PATH_PROPERTY + " at libcuda.so.1.";

    // CUresult values this code tests for (cuda.h, enum cudaError_enum).
    public static final int CUDA_SUCCESS = 0;
    public static final int CUDA_ERROR_INVALID_VALUE = 1;
    public static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
    public static final int CUDA_ERROR_NOT_INITIALIZED = 3;
    public static final int CUDA_ERROR_STUB_LIBRARY = 34;
    public static final int CUDA_ERROR_NO_DEVICE = 100;
    public static final int CUDA_ERROR_INVALID_DEVICE = 101;
    public static final int CUDA_ERROR_INVALID_CONTEXT = 201;
    public static final int CUDA_ERROR_INVALID_HANDLE = 400;
    public static final int CUDA_ERROR_NOT_FOUND = 500;
    public static final int CUDA_ERROR_NOT_READY = 600;
    public static final int CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712;
    public static final int CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713;
    public static final int CUDA_ERROR_LAUNCH_FAILED = 719;
    public static final int CUDA_ERROR_UNKNOWN = 999;

    // CUdevice_attribute.
    public static final int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
    public static final int CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
    public static final int CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40;
    public static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    public static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

    // Flags.
    public static final int CU_MEMHOSTREGISTER_PORTABLE = 0x01;
    public static final int CU_MEMHOSTALLOC_PORTABLE = 0x01;
    public static final int CU_STREAM_DEFAULT = 0x0;
    public static final int CU_STREAM_NON_BLOCKING = 0x1;
    public static final int CU_EVENT_DEFAULT = 0x0;
    public static final int CU_EVENT_BLOCKING_SYNC = 0x1;
    public static final int CU_EVENT_DISABLE_TIMING = 0x2;

    private final String library;
    private final MethodHandle cuGetErrorName;
    private final MethodHandle cuGetErrorString;
    private final MethodHandle cuInit;
    private final MethodHandle cuDriverGetVersion;
    private final MethodHandle cuDeviceGetCount;
    private final MethodHandle cuDeviceGet;
    private final MethodHandle cuDeviceGetName;
    private final MethodHandle cuDeviceTotalMem_v2;
    private final MethodHandle cuDeviceGetAttribute;
    private final MethodHandle cuDeviceGetPCIBusId;
    private final MethodHandle cuDevicePrimaryCtxRetain;
    private final MethodHandle cuDevicePrimaryCtxRelease_v2;
    private final MethodHandle cuCtxSetCurrent;
    private final MethodHandle cuCtxSynchronize;
    private final MethodHandle cuMemHostRegister_v2;
    private final MethodHandle cuMemHostUnregister;
    private final MethodHandle cuMemHostAlloc;
    private final MethodHandle cuMemFreeHost;
    private final MethodHandle cuMemAlloc_v2;
    private final MethodHandle cuMemFree_v2;
    private final MethodHandle cuMemcpyHtoD_v2;
    private final MethodHandle cuMemcpyDtoH_v2;
    private final MethodHandle cuMemcpyHtoDAsync_v2;
    private final MethodHandle cuMemcpyDtoDAsync_v2;
    private final MethodHandle cuIpcGetMemHandle;
    private final MethodHandle cuIpcOpenMemHandle_v2;
    private final MethodHandle cuIpcCloseMemHandle;
    private final MethodHandle cuStreamCreate;
    private final MethodHandle cuStreamDestroy_v2;
    private final MethodHandle cuStreamSynchronize;
    private final MethodHandle cuStreamWaitEvent;
    private final MethodHandle cuEventCreate;
    private final MethodHandle cuEventRecord;
    private final MethodHandle cuEventQuery;
    private final MethodHandle cuEventSynchronize;
    private final MethodHandle cuEventElapsedTime_v2;
    private final MethodHandle cuEventDestroy_v2;
    private final MethodHandle cuModuleLoadData;
    private final MethodHandle cuModuleUnload;
    private final MethodHandle cuModuleGetFunction;
    private final MethodHandle cuLaunchKernel;

    private CudaDriver(String library, SymbolLookup lib) {
        this.library = library;
        cuGetErrorName =
                NativeLibraries.downcall(lib, "cuGetErrorName", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        cuGetErrorString =
                NativeLibraries.downcall(lib, "cuGetErrorString", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        cuInit = NativeLibraries.downcall(lib, "cuInit", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        cuDriverGetVersion =
                NativeLibraries.downcall(lib, "cuDriverGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuDeviceGetCount = NativeLibraries.downcall(lib, "cuDeviceGetCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuDeviceGet = NativeLibraries.downcall(lib, "cuDeviceGet", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        cuDeviceGetName = NativeLibraries.downcall(
                lib, "cuDeviceGetName", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        cuDeviceTotalMem_v2 = NativeLibraries.downcall(
                lib, "cuDeviceTotalMem_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        cuDeviceGetAttribute = NativeLibraries.downcall(
                lib, "cuDeviceGetAttribute", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        cuDeviceGetPCIBusId = NativeLibraries.downcall(
                lib, "cuDeviceGetPCIBusId", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        cuDevicePrimaryCtxRetain = NativeLibraries.downcall(
                lib, "cuDevicePrimaryCtxRetain", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        cuDevicePrimaryCtxRelease_v2 = NativeLibraries.downcall(
                lib, "cuDevicePrimaryCtxRelease_v2", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        cuCtxSetCurrent = NativeLibraries.downcall(lib, "cuCtxSetCurrent", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuCtxSynchronize = NativeLibraries.downcall(lib, "cuCtxSynchronize", FunctionDescriptor.of(JAVA_INT));
        cuMemHostRegister_v2 = NativeLibraries.downcall(
                lib, "cuMemHostRegister_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        cuMemHostUnregister =
                NativeLibraries.downcall(lib, "cuMemHostUnregister", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuMemHostAlloc = NativeLibraries.downcall(
                lib, "cuMemHostAlloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        cuMemFreeHost = NativeLibraries.downcall(lib, "cuMemFreeHost", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuMemAlloc_v2 =
                NativeLibraries.downcall(lib, "cuMemAlloc_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        cuMemFree_v2 = NativeLibraries.downcall(lib, "cuMemFree_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        cuMemcpyHtoD_v2 = NativeLibraries.downcall(
                lib, "cuMemcpyHtoD_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG));
        cuMemcpyDtoH_v2 = NativeLibraries.downcall(
                lib, "cuMemcpyDtoH_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
        cuMemcpyHtoDAsync_v2 = NativeLibraries.downcall(
                lib, "cuMemcpyHtoDAsync_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS));
        cuMemcpyDtoDAsync_v2 = NativeLibraries.downcall(
                lib, "cuMemcpyDtoDAsync_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
        cuIpcGetMemHandle =
                NativeLibraries.downcall(lib, "cuIpcGetMemHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        cuIpcOpenMemHandle_v2 = NativeLibraries.downcall(
                lib, "cuIpcOpenMemHandle_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, IPC_HANDLE, JAVA_INT));
        cuIpcCloseMemHandle =
                NativeLibraries.downcall(lib, "cuIpcCloseMemHandle", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        cuStreamCreate =
                NativeLibraries.downcall(lib, "cuStreamCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        cuStreamDestroy_v2 =
                NativeLibraries.downcall(lib, "cuStreamDestroy_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuStreamSynchronize =
                NativeLibraries.downcall(lib, "cuStreamSynchronize", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuStreamWaitEvent = NativeLibraries.downcall(
                lib, "cuStreamWaitEvent", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        cuEventCreate =
                NativeLibraries.downcall(lib, "cuEventCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        cuEventRecord =
                NativeLibraries.downcall(lib, "cuEventRecord", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        cuEventQuery = NativeLibraries.downcall(lib, "cuEventQuery", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuEventSynchronize =
                NativeLibraries.downcall(lib, "cuEventSynchronize", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        // cuda.h (12.8+) maps cuEventElapsedTime to cuEventElapsedTime_v2; same signature.
        cuEventElapsedTime_v2 = NativeLibraries.downcall(
                lib, "cuEventElapsedTime_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        cuEventDestroy_v2 =
                NativeLibraries.downcall(lib, "cuEventDestroy_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuModuleLoadData =
                NativeLibraries.downcall(lib, "cuModuleLoadData", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        cuModuleUnload = NativeLibraries.downcall(lib, "cuModuleUnload", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        cuModuleGetFunction = NativeLibraries.downcall(
                lib, "cuModuleGetFunction", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        cuLaunchKernel = NativeLibraries.downcall(
                lib,
                "cuLaunchKernel",
                FunctionDescriptor.of(
                        JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                        ADDRESS, ADDRESS, ADDRESS));
    }

    /**
     * Loads the driver: the file named by {@value #PATH_PROPERTY} when set, else {@code libcuda.so.1}
     * from the system's library path. Does not call {@code cuInit}.
     *
     * @throws NativeLibraryMissingException when no driver library is found, saying so in one sentence
     * @throws IllegalArgumentException when the library lacks a symbol Stoke needs (a driver older than CUDA 12.8)
     */
    public static CudaDriver load() {
        return load(defaultLibrary());
    }

    /** What {@link #load()} loads: {@value #PATH_PROPERTY} when set, else {@value #SONAME}. */
    public static String defaultLibrary() {
        String override = System.getProperty(PATH_PROPERTY);
        return override != null && !override.isBlank() ? override : SONAME;
    }

    /** The one-line reason given when {@code library} cannot be loaded. */
    public static String missingReason(String library) {
        return "no CUDA driver found (" + library + " could not be loaded): install the NVIDIA driver"
                + " (libcuda.so.1 comes with it, not with the CUDA toolkit), or point -D" + PATH_PROPERTY + " at it";
    }

    /** Loads the driver (or a stand-in with the same symbols) from {@code library}, a path or soname. */
    public static CudaDriver load(String library) {
        SymbolLookup lib;
        try {
            lib = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException e) {
            throw new NativeLibraryMissingException(
                    "CUDA driver",
                    library
                            + (library.equals(System.getProperty(PATH_PROPERTY))
                                    ? " (from -D" + PATH_PROPERTY + ")"
                                    : ""),
                    INSTALL_HINT,
                    e);
        }
        try {
            return new CudaDriver(library, lib);
        } catch (NoSuchElementException e) {
            throw new IllegalArgumentException(
                    library + " lacks a CUDA driver symbol Stoke needs (" + e.getMessage()
                            + "); Stoke needs a driver for CUDA 12.8 or newer",
                    e);
        }
    }

    /**
     * Loads the driver if there is one; otherwise returns the reason in {@link Availability#reason()}.
     * Never throws: "no GPU here" is an ordinary outcome.
     */
    public static Availability tryLoad() {
        String library = defaultLibrary();
        try {
            return new Availability(Optional.of(load(library)), null);
        } catch (NativeLibraryMissingException e) {
            return new Availability(Optional.empty(), missingReason(library));
        } catch (RuntimeException | LinkageError e) {
            return new Availability(Optional.empty(), "the CUDA driver could not be loaded: " + e.getMessage());
        }
    }

    /**
     * The outcome of {@link #tryLoad()}.
     *
     * @param driver the loaded driver, when there is one
     * @param reason why there is none, in one sentence, else null
     */
    public record Availability(Optional<CudaDriver> driver, String reason) {}

    /** What was loaded: the soname or path. */
    public String library() {
        return library;
    }

    // ------------------------------------------------------------------ errors

    /** Throws {@link CudaException} naming {@code call} unless {@code result} is {@code CUDA_SUCCESS}. */
    public void check(int result, String call) {
        if (result != CUDA_SUCCESS) {
            throw new CudaException(call, result, errorName(result), errorString(result));
        }
    }

    /** {@code CUDA_ERROR_*} name of a result, or {@code "CUresult <n>"} when the driver does not know it. */
    public String errorName(int result) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            return cuGetErrorName(result, out) == CUDA_SUCCESS ? cString(out.get(ADDRESS, 0)) : "CUresult " + result;
        }
    }

    /** The driver's description of a result, or {@code "unknown error"}. */
    public String errorString(int result) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            return cuGetErrorString(result, out) == CUDA_SUCCESS ? cString(out.get(ADDRESS, 0)) : "unknown error";
        }
    }

    private static String cString(MemorySegment p) {
        if (p.equals(MemorySegment.NULL)) {
            return "(null)";
        }
        // The driver's strings are static; 4096 bytes bounds the scan if one were unterminated.
        return p.reinterpret(4096).getString(0);
    }

    // ------------------------------------------------------------------ checked conveniences (not hot paths)

    /** {@code cuInit(0)}, checked. Idempotent in the driver. */
    public void init() {
        check(cuInit(0), "cuInit");
    }

    /** The driver's CUDA version, e.g. 13000 for 13.0. */
    public int driverVersion() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check(cuDriverGetVersion(out), "cuDriverGetVersion");
            return out.get(JAVA_INT, 0);
        }
    }

    /** Number of CUDA devices ({@link #init()} first). */
    public int deviceCount() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check(cuDeviceGetCount(out), "cuDeviceGetCount");
            return out.get(JAVA_INT, 0);
        }
    }

    /** Properties of device {@code ordinal} ({@link #init()} first). */
    public CudaDevice device(int ordinal) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check(cuDeviceGet(out, ordinal), "cuDeviceGet");
            int dev = out.get(JAVA_INT, 0);
            MemorySegment name = a.allocate(256);
            check(cuDeviceGetName(name, (int) name.byteSize(), dev), "cuDeviceGetName");
            MemorySegment bytes = a.allocate(JAVA_LONG);
            check(cuDeviceTotalMem_v2(bytes, dev), "cuDeviceTotalMem_v2");
            MemorySegment bus = a.allocate(64);
            check(cuDeviceGetPCIBusId(bus, (int) bus.byteSize(), dev), "cuDeviceGetPCIBusId");
            return new CudaDevice(
                    ordinal,
                    dev,
                    name.getString(0),
                    bytes.get(JAVA_LONG, 0),
                    bus.getString(0),
                    attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                    attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
                    attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                    attribute(dev, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT));
        }
    }

    /** Every device's properties. */
    public List<CudaDevice> devices() {
        int n = deviceCount();
        List<CudaDevice> all = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            all.add(device(i));
        }
        return all;
    }

    /** {@code cuDeviceGetAttribute}, checked. */
    public int attribute(int device, int attribute) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check(cuDeviceGetAttribute(out, attribute, device), "cuDeviceGetAttribute");
            return out.get(JAVA_INT, 0);
        }
    }

    // ------------------------------------------------------------------ raw bindings, one per C function

    public int cuGetErrorName(int error, MemorySegment pStr) {
        try {
            return (int) cuGetErrorName.invokeExact(error, pStr);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuGetErrorString(int error, MemorySegment pStr) {
        try {
            return (int) cuGetErrorString.invokeExact(error, pStr);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuInit(int flags) {
        try {
            return (int) cuInit.invokeExact(flags);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuDriverGetVersion(MemorySegment driverVersion) {
        try {
            return (int) cuDriverGetVersion.invokeExact(driverVersion);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuDeviceGetCount(MemorySegment count) {
        try {
            return (int) cuDeviceGetCount.invokeExact(count);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuDeviceGet(MemorySegment device, int ordinal) {
        try {
            return (int) cuDeviceGet.invokeExact(device, ordinal);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** Writes a NUL-terminated name of at most {@code len} bytes into {@code name}. */
    public int cuDeviceGetName(MemorySegment name, int len, int dev) {
        checkRoom(name, len);
        try {
            return (int) cuDeviceGetName.invokeExact(name, len, dev);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuDeviceTotalMem_v2(MemorySegment bytes, int dev) {
        try {
            return (int) cuDeviceTotalMem_v2.invokeExact(bytes, dev);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuDeviceGetAttribute(MemorySegment pi, int attrib, int dev) {
        try {
            return (int) cuDeviceGetAttribute.invokeExact(pi, attrib, dev);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuDeviceGetPCIBusId(MemorySegment pciBusId, int len, int dev) {
        checkRoom(pciBusId, len);
        try {
            return (int) cuDeviceGetPCIBusId.invokeExact(pciBusId, len, dev);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuDevicePrimaryCtxRetain(MemorySegment pctx, int dev) {
        try {
            return (int) cuDevicePrimaryCtxRetain.invokeExact(pctx, dev);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuDevicePrimaryCtxRelease_v2(int dev) {
        try {
            return (int) cuDevicePrimaryCtxRelease_v2.invokeExact(dev);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuCtxSetCurrent(MemorySegment ctx) {
        try {
            return (int) cuCtxSetCurrent.invokeExact(ctx);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuCtxSynchronize() {
        try {
            return (int) cuCtxSynchronize.invokeExact();
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuMemHostRegister_v2(MemorySegment p, long bytesize, int flags) {
        try {
            return (int) cuMemHostRegister_v2.invokeExact(p, bytesize, flags);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuMemHostUnregister(MemorySegment p) {
        try {
            return (int) cuMemHostUnregister.invokeExact(p);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuMemHostAlloc(MemorySegment pp, long bytesize, int flags) {
        try {
            return (int) cuMemHostAlloc.invokeExact(pp, bytesize, flags);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuMemFreeHost(MemorySegment p) {
        try {
            return (int) cuMemFreeHost.invokeExact(p);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuMemAlloc_v2(MemorySegment dptr, long bytesize) {
        try {
            return (int) cuMemAlloc_v2.invokeExact(dptr, bytesize);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuMemFree_v2(long dptr) {
        try {
            return (int) cuMemFree_v2.invokeExact(dptr);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /**
     * Synchronous copy of {@code byteCount} bytes from {@code srcHost}. The Java side cannot check
     * the device pointer; {@link DeviceBuffer} does, and checks {@code srcHost} holds the bytes.
     */
    public int cuMemcpyHtoD_v2(long dstDevice, MemorySegment srcHost, long byteCount) {
        checkRoom(srcHost, byteCount);
        try {
            return (int) cuMemcpyHtoD_v2.invokeExact(dstDevice, srcHost, byteCount);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** Synchronous copy into {@code dstHost}, which must hold {@code byteCount} bytes (checked here). */
    public int cuMemcpyDtoH_v2(MemorySegment dstHost, long srcDevice, long byteCount) {
        checkRoom(dstHost, byteCount);
        try {
            return (int) cuMemcpyDtoH_v2.invokeExact(dstHost, srcDevice, byteCount);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /**
     * Asynchronous copy on {@code hStream}. {@code srcHost} must stay valid and unchanged until the
     * copy completes (record an event after it); it is truly asynchronous only from pinned memory.
     */
    public int cuMemcpyHtoDAsync_v2(long dstDevice, MemorySegment srcHost, long byteCount, MemorySegment hStream) {
        checkRoom(srcHost, byteCount);
        try {
            return (int) cuMemcpyHtoDAsync_v2.invokeExact(dstDevice, srcHost, byteCount, hStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /**
     * Asynchronous device-to-device copy on {@code hStream}; both ranges are the caller's to check
     * ({@link DeviceBuffer#copyFromDeviceAsync} does).
     */
    public int cuMemcpyDtoDAsync_v2(long dstDevice, long srcDevice, long byteCount, MemorySegment hStream) {
        try {
            return (int) cuMemcpyDtoDAsync_v2.invokeExact(dstDevice, srcDevice, byteCount, hStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** Size of a {@code CUipcMemHandle}, {@code CU_IPC_HANDLE_SIZE}. */
    public static final int IPC_HANDLE_SIZE = 64;

    /** {@code CUipcMemHandle}, passed by value. */
    private static final StructLayout IPC_HANDLE = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(IPC_HANDLE_SIZE, JAVA_BYTE).withName("reserved"));

    /** {@code CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}, the one flag {@code cuIpcOpenMemHandle} takes. */
    public static final int IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;

    /**
     * Writes the IPC handle of the allocation based at {@code dptr} into {@code pHandle}, which must
     * hold {@value #IPC_HANDLE_SIZE} bytes (checked here): another process opens it with
     * {@code cuIpcOpenMemHandle}.
     */
    public int cuIpcGetMemHandle(MemorySegment pHandle, long dptr) {
        checkRoom(pHandle, IPC_HANDLE_SIZE);
        try {
            return (int) cuIpcGetMemHandle.invokeExact(pHandle, dptr);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /**
     * Opens another process's allocation by its IPC {@code handle} ({@value #IPC_HANDLE_SIZE} bytes,
     * checked here) in the current context; its device pointer is written to {@code pdptr} (8 bytes,
     * checked here). Close it with {@link #cuIpcCloseMemHandle}.
     */
    public int cuIpcOpenMemHandle_v2(MemorySegment pdptr, MemorySegment handle, int flags) {
        checkRoom(pdptr, Long.BYTES);
        checkRoom(handle, IPC_HANDLE_SIZE);
        try {
            return (int) cuIpcOpenMemHandle_v2.invokeExact(pdptr, handle.asSlice(0, IPC_HANDLE_SIZE), flags);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuIpcCloseMemHandle(long dptr) {
        try {
            return (int) cuIpcCloseMemHandle.invokeExact(dptr);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuStreamCreate(MemorySegment phStream, int flags) {
        try {
            return (int) cuStreamCreate.invokeExact(phStream, flags);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuStreamDestroy_v2(MemorySegment hStream) {
        try {
            return (int) cuStreamDestroy_v2.invokeExact(hStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuStreamSynchronize(MemorySegment hStream) {
        try {
            return (int) cuStreamSynchronize.invokeExact(hStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuStreamWaitEvent(MemorySegment hStream, MemorySegment hEvent, int flags) {
        try {
            return (int) cuStreamWaitEvent.invokeExact(hStream, hEvent, flags);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuEventCreate(MemorySegment phEvent, int flags) {
        try {
            return (int) cuEventCreate.invokeExact(phEvent, flags);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuEventRecord(MemorySegment hEvent, MemorySegment hStream) {
        try {
            return (int) cuEventRecord.invokeExact(hEvent, hStream);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** {@code CUDA_SUCCESS} when the event's work is done, {@code CUDA_ERROR_NOT_READY} while it is not. */
    public int cuEventQuery(MemorySegment hEvent) {
        try {
            return (int) cuEventQuery.invokeExact(hEvent);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuEventSynchronize(MemorySegment hEvent) {
        try {
            return (int) cuEventSynchronize.invokeExact(hEvent);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuEventElapsedTime_v2(MemorySegment pMilliseconds, MemorySegment hStart, MemorySegment hEnd) {
        checkRoom(pMilliseconds, JAVA_FLOAT.byteSize());
        try {
            return (int) cuEventElapsedTime_v2.invokeExact(pMilliseconds, hStart, hEnd);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuEventDestroy_v2(MemorySegment hEvent) {
        try {
            return (int) cuEventDestroy_v2.invokeExact(hEvent);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** {@code image}: NUL-terminated PTX text, a cubin or a fatbin. */
    public int cuModuleLoadData(MemorySegment module, MemorySegment image) {
        try {
            return (int) cuModuleLoadData.invokeExact(module, image);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuModuleUnload(MemorySegment hmod) {
        try {
            return (int) cuModuleUnload.invokeExact(hmod);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    public int cuModuleGetFunction(MemorySegment hfunc, MemorySegment hmod, MemorySegment name) {
        try {
            return (int) cuModuleGetFunction.invokeExact(hfunc, hmod, name);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /**
     * {@code kernelParams} is an array of pointers, one per kernel parameter, each to that
     * parameter's value; the driver copies the values before returning, so the array may be reused.
     */
    public int cuLaunchKernel(
            MemorySegment f,
            int gridDimX,
            int gridDimY,
            int gridDimZ,
            int blockDimX,
            int blockDimY,
            int blockDimZ,
            int sharedMemBytes,
            MemorySegment hStream,
            MemorySegment kernelParams,
            MemorySegment extra) {
        try {
            return (int) cuLaunchKernel.invokeExact(
                    f,
                    gridDimX,
                    gridDimY,
                    gridDimZ,
                    blockDimX,
                    blockDimY,
                    blockDimZ,
                    sharedMemBytes,
                    hStream,
                    kernelParams,
                    extra);
        } catch (Throwable t) {
            throw NativeLibraries.rethrow(t);
        }
    }

    /** Native writes go through here first: a segment too small for what C will write is a Java exception. */
    static void checkRoom(MemorySegment segment, long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative length " + bytes);
        }
        if (segment.byteSize() < bytes) {
            throw new IndexOutOfBoundsException("segment of " + segment.byteSize() + " bytes cannot hold " + bytes);
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("segment is closed");
        }
    }
}
