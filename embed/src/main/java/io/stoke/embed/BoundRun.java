package io.stoke.embed;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import ai.onnxruntime.OrtSession;
import io.stoke.ffm.OnnxRuntimeApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.reflect.Field;

/**
 * Runs one session on tensors named by address, through ONNX Runtime's IO binding (its C API, by
 * {@link OnnxRuntimeApi}): the input where it lies, in the memory {@code inputMemory} names
 * ("Cuda": a device batch, read on the device by the CUDA provider, never copied to the host), the
 * output into host memory the caller owns. The session itself is the Java API's, opened and
 * configured there; this reads its native handle.
 *
 * <p>Ownership: this object's arena holds the names, the memory descriptions, the binding and the
 * run options; {@link #close} releases them, not the session. Per run, two {@code OrtValue}s (a few
 * dozen bytes each, no pixels) are made and released. One caller at a time.
 */
final class BoundRun implements AutoCloseable {
    private static final int MAX_RANK = 8;

    private final OnnxRuntimeApi api;
    private final Arena arena;
    private final String inputMemory;
    private final int device;
    private final MemorySegment session;
    private final MemorySegment inputName;
    private final MemorySegment outputName;
    private final MemorySegment inputInfo;
    private final MemorySegment outputInfo;
    private final MemorySegment binding;
    private final MemorySegment runOptions;
    private final MemorySegment shape;
    private final MemorySegment out;

    private BoundRun(OnnxRuntimeApi api, OrtSession session, String input, String output, String inputMemory, int id) {
        this.api = api;
        this.session = MemorySegment.ofAddress(nativeHandle(session)); // before the arena: nothing to close if it fails
        this.inputMemory = inputMemory;
        this.device = id;
        arena = Arena.ofShared();
        inputName = arena.allocateFrom(input);
        outputName = arena.allocateFrom(output);
        shape = arena.allocate(JAVA_LONG, MAX_RANK);
        out = arena.allocate(ADDRESS);
        boolean done = false;
        MemorySegment in = MemorySegment.NULL;
        MemorySegment host = MemorySegment.NULL;
        MemorySegment bound = MemorySegment.NULL;
        try {
            in = memoryInfo(inputMemory, id);
            host = memoryInfo("Cpu", 0);
            bound = made(api.createIoBinding(this.session, out), "CreateIoBinding");
            runOptions = made(api.createRunOptions(out), "CreateRunOptions");
            done = true;
        } finally {
            if (!done) {
                if (bound.address() != 0) {
                    api.releaseIoBinding(bound);
                }
                releaseInfo(in);
                releaseInfo(host);
                arena.close();
            }
        }
        inputInfo = in;
        outputInfo = host;
        binding = bound;
    }

    /**
     * IO binding of {@code session} ({@code input} and {@code output} by name), its input in
     * {@code inputMemory} ("Cpu", or "Cuda" for device {@code id}).
     *
     * @throws IllegalStateException ONNX Runtime's library or C API cannot be reached from here,
     *     or refused a step (its message)
     */
    static BoundRun of(OrtSession session, String input, String output, String inputMemory, int id) {
        return new BoundRun(api(), session, input, output, inputMemory, id);
    }

    /**
     * The C API of the library the Java API loaded.
     *
     * @throws IllegalStateException it cannot be reached from here (said with the reason)
     */
    static OnnxRuntimeApi api() {
        if (Library.API == null) {
            throw new IllegalStateException(
                    "ONNX Runtime's C API cannot be reached (" + Library.FAILURE.getMessage() + ")", Library.FAILURE);
        }
        return Library.API;
    }

    /** The ONNX Runtime library's version, as its C API reports it. */
    static String version() {
        return api().version();
    }

    /**
     * Runs the session on the tensor at {@code input} ({@code inputBytes} long, {@code inputShape},
     * of ONNX type {@code elementType}), writing the output of {@code outputShape} (float32) into
     * {@code output}; returns when the output is there.
     */
    void run(
            long input, long inputBytes, long[] inputShape, int elementType, MemorySegment output, long[] outputShape) {
        MemorySegment in = MemorySegment.NULL;
        MemorySegment result = MemorySegment.NULL;
        try {
            in = tensor(inputInfo, MemorySegment.ofAddress(input), inputBytes, inputShape, elementType, "input");
            result = tensor(
                    outputInfo,
                    output,
                    output.byteSize(),
                    outputShape,
                    OnnxRuntimeApi.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                    "output");
            api.check(api.bindInput(binding, inputName, in), "BindInput");
            api.check(api.bindOutput(binding, outputName, result), "BindOutput");
            api.check(api.runWithBinding(session, runOptions, binding), "RunWithBinding");
            // The output is host memory: ONNX Runtime copies it there from the device on its own
            // stream, done when this returns.
            api.check(api.synchronizeBoundOutputs(binding), "SynchronizeBoundOutputs");
        } finally {
            api.clearBoundInputs(binding);
            api.clearBoundOutputs(binding);
            releaseValue(in);
            releaseValue(result);
        }
    }

    private MemorySegment tensor(
            MemorySegment info, MemorySegment data, long bytes, long[] dims, int type, String what) {
        if (dims.length > MAX_RANK) {
            throw new IllegalArgumentException("a tensor of rank " + dims.length + ", over " + MAX_RANK);
        }
        MemorySegment.copy(dims, 0, shape, JAVA_LONG, 0, dims.length);
        return made(
                api.createTensorWithDataAsOrtValue(info, data, bytes, shape, dims.length, type, out),
                "CreateTensorWithDataAsOrtValue(" + what + ")");
    }

    /** An {@code OrtMemoryInfo} of device {@code id}'s memory {@code name} ("Cpu", "Cuda"), its default allocator's. */
    private MemorySegment memoryInfo(String name, int id) {
        return made(
                api.createMemoryInfo(
                        arena.allocateFrom(name),
                        OnnxRuntimeApi.ORT_DEVICE_ALLOCATOR,
                        id,
                        OnnxRuntimeApi.ORT_MEM_TYPE_DEFAULT,
                        out),
                "CreateMemoryInfo(" + name + ")");
    }

    /** Whether this binding takes its input in memory {@code memory} of device {@code id}. */
    boolean takes(String memory, int id) {
        return inputMemory.equals(memory) && device == id;
    }

    /** The handle {@code status}'s call wrote into {@link #out}, once the status says it succeeded. */
    private MemorySegment made(MemorySegment status, String call) {
        api.check(status, call);
        return out.get(ADDRESS, 0);
    }

    private void releaseInfo(MemorySegment info) {
        if (info.address() != 0) {
            api.releaseMemoryInfo(info);
        }
    }

    private void releaseValue(MemorySegment value) {
        if (value.address() != 0) {
            api.releaseValue(value);
        }
    }

    @Override
    public void close() {
        api.releaseRunOptions(runOptions);
        api.releaseIoBinding(binding);
        api.releaseMemoryInfo(inputInfo);
        api.releaseMemoryInfo(outputInfo);
        arena.close();
    }

    /**
     * The {@code OrtSession*} behind the Java API's session: its private {@code nativeHandle}
     * (ONNX Runtime's Java package is an automatic module, whose packages are open to reflection).
     */
    private static long nativeHandle(OrtSession session) {
        try {
            Field f = OrtSession.class.getDeclaredField("nativeHandle");
            f.setAccessible(true);
            return f.getLong(session);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException(
                    "this ONNX Runtime Java API keeps its session's native handle where Stoke"
                            + " does not look (OrtSession.nativeHandle): " + e,
                    e);
        }
    }

    /**
     * The library the Java API loaded, found by its soname: dlopen of a name already loaded gives
     * that library, not a second copy. Looked up once; the Java API loads it first
     * ({@code OrtEnvironment}, which opening a session needs).
     */
    private static final class Library {
        static final OnnxRuntimeApi API;
        static final RuntimeException FAILURE;

        static {
            OnnxRuntimeApi api = null;
            RuntimeException failure = null;
            try {
                api = OnnxRuntimeApi.of(SymbolLookup.libraryLookup(OnnxRuntimeApi.SONAME, Arena.global()));
            } catch (RuntimeException e) {
                failure = e;
            }
            API = api;
            FAILURE = failure;
        }
    }
}
