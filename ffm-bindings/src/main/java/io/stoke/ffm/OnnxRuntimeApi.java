package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The part of ONNX Runtime's C API ({@code onnxruntime_c_api.h}) that binds device memory to a
 * session's inputs and outputs (IO binding), through {@code java.lang.foreign}: one Java method per
 * member of the {@code OrtApi} function table, named as the member. ONNX Runtime's Java API has no
 * IO binding (ONNX Runtime issue 26209); everything else stays with that API.
 *
 * <p>The C API is a table of function pointers that {@code OrtGetApiBase()->GetApi(version)}
 * returns, not exported symbols. Its order never changes once a version has shipped (the rule
 * stated above {@code ort_api_1_to_N} in {@code onnxruntime_c_api.cc}), so each member is read at a
 * fixed index: those of the shipped versions 1 to 10, counted from that table. The static_asserts
 * below it fix the end of each version (ReleaseCustomOpDomain 101, ReleaseModelMetadata 118,
 * SetGlobalSpinControl 149, ReleaseArenaCfg 157, GetSparseTensorIndices 191,
 * SynchronizeBoundOutputs 203), and the count agrees with each. {@code BoundRunTest} (embed) runs
 * the members against the real library. Version {@value #API_VERSION} is asked for, the first with
 * SynchronizeBoundInputs and SynchronizeBoundOutputs; every ONNX Runtime since 1.10 serves it.
 *
 * <p>Raw: the status-returning methods return the {@code OrtStatus*} (NULL on success), which
 * {@link #check} turns into an {@link IllegalStateException} carrying ONNX Runtime's message, and
 * releases. Handles are {@link MemorySegment} addresses. No policy: the embed module owns the
 * session and the memory.
 */
public final class OnnxRuntimeApi {
    /** The C API version asked for: 10, ONNX Runtime 1.10's. */
    public static final int API_VERSION = 10;

    /** The library's soname; ONNX Runtime's Java API loads the library under it. */
    public static final String SONAME = "libonnxruntime.so.1";

    // OrtAllocatorType, OrtMemType and ONNXTensorElementDataType values (onnxruntime_c_api.h).
    public static final int ORT_DEVICE_ALLOCATOR = 0;
    public static final int ORT_MEM_TYPE_DEFAULT = 0;
    public static final int ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1;
    public static final int ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 = 2;

    // Indices into OrtApi (shipped versions 1 to 10; see the class comment).
    private static final int CREATE_STATUS = 0;
    private static final int GET_ERROR_CODE = 1;
    private static final int GET_ERROR_MESSAGE = 2;
    private static final int CREATE_RUN_OPTIONS = 39;
    private static final int CREATE_TENSOR_WITH_DATA_AS_ORT_VALUE = 49;
    private static final int CREATE_MEMORY_INFO = 68;
    private static final int RELEASE_STATUS = 93;
    private static final int RELEASE_MEMORY_INFO = 94;
    private static final int RELEASE_VALUE = 96;
    private static final int RELEASE_RUN_OPTIONS = 97;
    private static final int RUN_WITH_BINDING = 133;
    private static final int CREATE_IO_BINDING = 134;
    private static final int RELEASE_IO_BINDING = 135;
    private static final int BIND_INPUT = 136;
    private static final int BIND_OUTPUT = 137;
    private static final int CLEAR_BOUND_INPUTS = 141;
    private static final int CLEAR_BOUND_OUTPUTS = 142;
    private static final int SYNCHRONIZE_BOUND_INPUTS = 202;
    private static final int SYNCHRONIZE_BOUND_OUTPUTS = 203;
    private static final int TABLE_ENTRIES = SYNCHRONIZE_BOUND_OUTPUTS + 1;

    private final String version;
    private final MethodHandle createStatus;
    private final MethodHandle getErrorCode;
    private final MethodHandle getErrorMessage;
    private final MethodHandle releaseStatus;
    private final MethodHandle createRunOptions;
    private final MethodHandle releaseRunOptions;
    private final MethodHandle createMemoryInfo;
    private final MethodHandle releaseMemoryInfo;
    private final MethodHandle createTensorWithDataAsOrtValue;
    private final MethodHandle releaseValue;
    private final MethodHandle createIoBinding;
    private final MethodHandle releaseIoBinding;
    private final MethodHandle bindInput;
    private final MethodHandle bindOutput;
    private final MethodHandle clearBoundInputs;
    private final MethodHandle clearBoundOutputs;
    private final MethodHandle runWithBinding;
    private final MethodHandle synchronizeBoundInputs;
    private final MethodHandle synchronizeBoundOutputs;

    private OnnxRuntimeApi(String version, MemorySegment table) {
        this.version = version;
        FunctionDescriptor status1 = FunctionDescriptor.of(ADDRESS, ADDRESS);
        FunctionDescriptor release = FunctionDescriptor.ofVoid(ADDRESS);
        createStatus = member(table, CREATE_STATUS, FunctionDescriptor.of(ADDRESS, JAVA_INT, ADDRESS));
        getErrorCode = member(table, GET_ERROR_CODE, FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getErrorMessage = member(table, GET_ERROR_MESSAGE, FunctionDescriptor.of(ADDRESS, ADDRESS));
        releaseStatus = member(table, RELEASE_STATUS, release);
        createRunOptions = member(table, CREATE_RUN_OPTIONS, status1);
        releaseRunOptions = member(table, RELEASE_RUN_OPTIONS, release);
        createMemoryInfo = member(
                table,
                CREATE_MEMORY_INFO,
                FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
        releaseMemoryInfo = member(table, RELEASE_MEMORY_INFO, release);
        createTensorWithDataAsOrtValue = member(
                table,
                CREATE_TENSOR_WITH_DATA_AS_ORT_VALUE,
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        releaseValue = member(table, RELEASE_VALUE, release);
        createIoBinding = member(table, CREATE_IO_BINDING, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        releaseIoBinding = member(table, RELEASE_IO_BINDING, release);
        FunctionDescriptor bind = FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS);
        bindInput = member(table, BIND_INPUT, bind);
        bindOutput = member(table, BIND_OUTPUT, bind);
        clearBoundInputs = member(table, CLEAR_BOUND_INPUTS, release);
        clearBoundOutputs = member(table, CLEAR_BOUND_OUTPUTS, release);
        runWithBinding = member(table, RUN_WITH_BINDING, bind);
        synchronizeBoundInputs = member(table, SYNCHRONIZE_BOUND_INPUTS, status1);
        synchronizeBoundOutputs = member(table, SYNCHRONIZE_BOUND_OUTPUTS, status1);
    }

    private static MethodHandle member(MemorySegment table, int index, FunctionDescriptor fd) {
        MemorySegment fn = table.getAtIndex(ADDRESS, index);
        if (fn.address() == 0) {
            throw new IllegalStateException("ONNX Runtime's C API has no function at index " + index);
        }
        return Linker.nativeLinker().downcallHandle(fn, fd);
    }

    /**
     * Binds the C API of the ONNX Runtime that {@code library} holds ({@code OrtGetApiBase}).
     *
     * @throws IllegalStateException the library has no {@code OrtGetApiBase}, or does not serve
     *     version {@value #API_VERSION}
     */
    public static OnnxRuntimeApi of(SymbolLookup library) {
        MemorySegment getApiBase = library.find("OrtGetApiBase")
                .orElseThrow(() -> new IllegalStateException("the library has no OrtGetApiBase: not ONNX Runtime"));
        try {
            Linker linker = Linker.nativeLinker();
            MemorySegment base = ((MemorySegment) linker.downcallHandle(getApiBase, FunctionDescriptor.of(ADDRESS))
                            .invokeExact())
                    .reinterpret(2 * ADDRESS.byteSize());
            MemorySegment getApi = base.getAtIndex(ADDRESS, 0);
            MemorySegment getVersionString = base.getAtIndex(ADDRESS, 1);
            String version = ((MemorySegment) linker.downcallHandle(getVersionString, FunctionDescriptor.of(ADDRESS))
                            .invokeExact())
                    .reinterpret(Long.MAX_VALUE)
                    .getString(0);
            MemorySegment table =
                    (MemorySegment) linker.downcallHandle(getApi, FunctionDescriptor.of(ADDRESS, JAVA_INT))
                            .invokeExact(API_VERSION);
            if (table.address() == 0) {
                throw new IllegalStateException(
                        "ONNX Runtime " + version + " does not serve its C API's version " + API_VERSION);
            }
            return new OnnxRuntimeApi(version, table.reinterpret(TABLE_ENTRIES * ADDRESS.byteSize()));
        } catch (IllegalStateException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("binding ONNX Runtime's C API failed", t);
        }
    }

    /** {@code OrtGetApiBase()->GetVersionString()}: the library's version, e.g. {@code 1.23.2}. */
    public String version() {
        return version;
    }

    /**
     * Throws the failure {@code status} carries, named after {@code call}, and releases it; returns
     * on NULL (success).
     */
    public void check(MemorySegment status, String call) {
        if (status.address() == 0) {
            return;
        }
        String message;
        int code;
        try {
            code = getErrorCode(status);
            message = getErrorMessage(status);
        } finally {
            releaseStatus(status);
        }
        throw new IllegalStateException("ONNX Runtime's " + call + " failed (OrtErrorCode " + code + "): " + message);
    }

    public MemorySegment createStatus(int code, MemorySegment message) {
        try {
            return (MemorySegment) createStatus.invokeExact(code, message);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int getErrorCode(MemorySegment status) {
        try {
            return (int) getErrorCode.invokeExact(status);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The status's message, copied out (valid only while the status lives in C). */
    public String getErrorMessage(MemorySegment status) {
        MemorySegment text = invokeAddress(getErrorMessage, status);
        return text.address() == 0 ? "" : text.reinterpret(Long.MAX_VALUE).getString(0);
    }

    public void releaseStatus(MemorySegment status) {
        invokeVoid(releaseStatus, status);
    }

    /** {@code out}: an {@code OrtRunOptions**}. */
    public MemorySegment createRunOptions(MemorySegment out) {
        return invokeAddress(createRunOptions, out);
    }

    public void releaseRunOptions(MemorySegment options) {
        invokeVoid(releaseRunOptions, options);
    }

    /** {@code name}: a C string ("Cpu", "Cuda"); {@code out}: an {@code OrtMemoryInfo**}. */
    public MemorySegment createMemoryInfo(
            MemorySegment name, int allocatorType, int id, int memType, MemorySegment out) {
        try {
            return (MemorySegment) createMemoryInfo.invokeExact(name, allocatorType, id, memType, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void releaseMemoryInfo(MemorySegment info) {
        invokeVoid(releaseMemoryInfo, info);
    }

    /**
     * A tensor over memory the caller owns ({@code data}, {@code bytes} long, where {@code info}
     * says), with {@code rank} int64 dimensions at {@code shape}; {@code out}: an {@code OrtValue**}.
     * ONNX Runtime neither copies nor frees {@code data}.
     */
    public MemorySegment createTensorWithDataAsOrtValue(
            MemorySegment info,
            MemorySegment data,
            long bytes,
            MemorySegment shape,
            long rank,
            int elementType,
            MemorySegment out) {
        try {
            return (MemorySegment)
                    createTensorWithDataAsOrtValue.invokeExact(info, data, bytes, shape, rank, elementType, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void releaseValue(MemorySegment value) {
        invokeVoid(releaseValue, value);
    }

    /** {@code session}: an {@code OrtSession*}; {@code out}: an {@code OrtIoBinding**}. */
    public MemorySegment createIoBinding(MemorySegment session, MemorySegment out) {
        return invokeAddress(createIoBinding, session, out);
    }

    public void releaseIoBinding(MemorySegment binding) {
        invokeVoid(releaseIoBinding, binding);
    }

    public MemorySegment bindInput(MemorySegment binding, MemorySegment name, MemorySegment value) {
        return invokeAddress(bindInput, binding, name, value);
    }

    public MemorySegment bindOutput(MemorySegment binding, MemorySegment name, MemorySegment value) {
        return invokeAddress(bindOutput, binding, name, value);
    }

    public void clearBoundInputs(MemorySegment binding) {
        invokeVoid(clearBoundInputs, binding);
    }

    public void clearBoundOutputs(MemorySegment binding) {
        invokeVoid(clearBoundOutputs, binding);
    }

    public MemorySegment runWithBinding(MemorySegment session, MemorySegment runOptions, MemorySegment binding) {
        return invokeAddress(runWithBinding, session, runOptions, binding);
    }

    public MemorySegment synchronizeBoundInputs(MemorySegment binding) {
        return invokeAddress(synchronizeBoundInputs, binding);
    }

    public MemorySegment synchronizeBoundOutputs(MemorySegment binding) {
        return invokeAddress(synchronizeBoundOutputs, binding);
    }

    private static MemorySegment invokeAddress(MethodHandle h, MemorySegment a) {
        try {
            return (MemorySegment) h.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static MemorySegment invokeAddress(MethodHandle h, MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) h.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static MemorySegment invokeAddress(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c) {
        try {
            return (MemorySegment) h.invokeExact(a, b, c);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static void invokeVoid(MethodHandle h, MemorySegment a) {
        try {
            h.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
