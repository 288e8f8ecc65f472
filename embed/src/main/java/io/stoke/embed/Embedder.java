package io.stoke.embed;

import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import io.stoke.ffm.OnnxRuntimeApi;
import io.stoke.loader.Batch;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Map;

/**
 * Runs an ONNX Runtime session on batches where they lie: the input tensor is a direct buffer
 * over the batch's slot (ONNX Runtime's Java API takes a direct buffer as the tensor's memory, no
 * copy), and the output is written into memory this embedder owns (a pinned output), so neither
 * side of a run copies pixels or allocates their size on the heap. One consumer at a time.
 *
 * <p>Ownership: the output memory belongs to this embedder's arena and is valid until the next
 * {@link #embed} or {@link #close}; the input stays the batch's, which must stay open during
 * {@link #embed}.
 */
public final class Embedder implements AutoCloseable {
    private final OrtEnvironment env;
    private final OrtSession session;
    private final ModelContract contract;
    private final long[] outputShape;
    private final InferenceDevice device;
    // IO binding for inputs in device memory (embedOnDevice), made at the first such run.
    private BoundRun bound;
    // Shared, not confined: one consumer at a time, but not always the same thread (a Spark
    // executor's tasks borrow an embedder from its pool, each on a thread of the pool's own).
    private final Arena arena = Arena.ofShared();
    private MemorySegment output;
    private long lastRunNanos;

    private Embedder(
            OrtEnvironment env,
            OrtSession session,
            ModelContract contract,
            long[] outputShape,
            InferenceDevice device) {
        this.env = env;
        this.session = session;
        this.contract = contract;
        this.outputShape = outputShape;
        this.device = device;
    }

    /**
     * Opens {@code model} with {@code intraOpThreads} threads for each operator (0: ONNX Runtime's
     * choice) on {@code device}; {@code outputName} picks the output when the model has several.
     */
    public static Embedder open(Path model, int intraOpThreads, InferenceDevice device, String outputName)
            throws OrtException {
        OrtLibraries.prepare(System.err::println); // before the Java API loads its libraries
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        OrtLibraries.tidy(); // after it loaded them
        OrtSession session;
        try (OrtSession.SessionOptions options = new OrtSession.SessionOptions()) {
            options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            options.setExecutionMode(OrtSession.SessionOptions.ExecutionMode.SEQUENTIAL);
            options.setInterOpNumThreads(1);
            if (intraOpThreads > 0) {
                options.setIntraOpNumThreads(intraOpThreads);
            }
            // Idle operator threads sleep instead of spinning: the cores they would spin on are
            // the loader's, decoding the next batches meanwhile.
            options.addConfigEntry("session.intra_op.allow_spinning", "0");
            device.configure(options);
            session = env.createSession(model.toString(), options);
        }
        try {
            ModelContract contract = ModelContract.of(session, outputName);
            long[] shape = ((TensorInfo)
                            session.getOutputInfo().get(contract.outputName()).getInfo())
                    .getShape()
                    .clone();
            return new Embedder(env, session, contract, shape, device);
        } catch (RuntimeException | OrtException e) {
            session.close();
            throw e;
        }
    }

    public ModelContract contract() {
        return contract;
    }

    /**
     * Runs the model on {@code batch}'s pixels, read in place from its slot.
     *
     * @return {@code batch.size() * dimension} float32 values, row i for the batch's sample i, in
     *     this embedder's memory: valid until the next call
     */
    public MemorySegment embed(Batch batch) throws OrtException {
        return embed(batch.pixels(), batch.shape());
    }

    /**
     * Runs the model on a batch's pixels in host memory, read in place: {@code shape} is the batch's
     * ({@code [n, H, W, 3]} uint8 or {@code [n, 3, H, W]} float32, as the contract's layout says), and
     * {@code pixels} holds at least its elements (a buffer longer than one batch is read from its start).
     *
     * @return {@code n * dimension} float32 values, row i for the batch's sample i, in this
     *     embedder's memory: valid until the next call
     */
    public MemorySegment embed(MemorySegment pixels, long[] inputShape) throws OrtException {
        int n = Math.toIntExact(inputShape[0]);
        long inBytes = inputBytes(inputShape, pixels.byteSize());
        MemorySegment rows = rows(n);
        ByteBuffer in = pixels.asSlice(0, inBytes).asByteBuffer().order(ByteOrder.nativeOrder());
        ByteBuffer out = rows.asByteBuffer().order(ByteOrder.nativeOrder());
        long start = System.nanoTime();
        try (OnnxTensor input = floats()
                        ? OnnxTensor.createTensor(env, in.asFloatBuffer(), inputShape)
                        : OnnxTensor.createTensor(env, in, inputShape, OnnxJavaType.UINT8);
                OnnxTensor pinned = OnnxTensor.createTensor(env, out.asFloatBuffer(), outputShape);
                OrtSession.Result _ = session.run(
                        Map.of(contract.inputName(), input),
                        Map.<String, OnnxValue>of(contract.outputName(), pinned))) {
            lastRunNanos = System.nanoTime() - start;
        }
        return rows;
    }

    /**
     * Runs the model on a batch's pixels in device memory, read there: ONNX Runtime's CUDA provider
     * takes the tensor at {@code pointer} on this embedder's device through IO binding (its C API;
     * the Java API has none), so the batch never crosses to the host. {@code pointer} is a device
     * address ({@code CUdeviceptr}) of at least {@code bytes}, holding {@code inputShape} as
     * {@link #embed(MemorySegment, long[])} takes it, complete before the call (its stream
     * synchronised) and left alone until this returns.
     *
     * @return as {@link #embed(MemorySegment, long[])}: the rows in this embedder's host memory
     * @throws IllegalStateException this embedder runs on the CPU, or ONNX Runtime refused a step
     */
    public MemorySegment embedOnDevice(long pointer, long bytes, long[] inputShape) {
        if (!device.cuda()) {
            throw new IllegalStateException("embedOnDevice needs a session on CUDA, not on " + device);
        }
        return embedBound(pointer, bytes, inputShape, "Cuda", device.index());
    }

    /** {@link #embedOnDevice} with the input in memory {@code memory} ("Cpu", "Cuda") of device {@code id}. */
    MemorySegment embedBound(long pointer, long bytes, long[] inputShape, String memory, int id) {
        int n = Math.toIntExact(inputShape[0]);
        long inBytes = inputBytes(inputShape, bytes);
        if (bound != null && !bound.takes(memory, id)) { // another memory than the last run's: bound again
            bound.close();
            bound = null;
        }
        if (bound == null) {
            bound = BoundRun.of(session, contract.inputName(), contract.outputName(), memory, id);
        }
        MemorySegment rows = rows(n);
        long start = System.nanoTime();
        bound.run(
                pointer,
                inBytes,
                inputShape,
                floats()
                        ? OnnxRuntimeApi.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
                        : OnnxRuntimeApi.ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8,
                rows,
                outputShape);
        lastRunNanos = System.nanoTime() - start;
        return rows;
    }

    private boolean floats() {
        return contract.layout() == ModelContract.Layout.FLOAT32_NCHW;
    }

    /**
     * The bytes of an input of {@code inputShape}, in the contract's element type.
     *
     * @throws IllegalStateException {@code available}, the bytes the pixels hold, are fewer
     */
    private long inputBytes(long[] inputShape, long available) {
        long expected = 1;
        for (long d : inputShape) {
            expected *= d;
        }
        long bytes = expected * (floats() ? 4 : 1);
        if (available < bytes) {
            throw new IllegalStateException("the batch's pixels hold " + available + " bytes, its shape " + bytes);
        }
        return bytes;
    }

    /** The first {@code n} rows of this embedder's output memory, grown as needed; sets outputShape[0]. */
    private MemorySegment rows(int n) {
        long outBytes = 4L * n * contract.dimension();
        if (output == null || output.byteSize() < outBytes) {
            output = arena.allocate(outBytes, 64);
        }
        outputShape[0] = n;
        return output.asSlice(0, outBytes);
    }

    /** How long the last {@link #embed}'s model run took. */
    public long lastRunNanos() {
        return lastRunNanos;
    }

    /** Value {@code j} of row {@code i} of an {@link #embed} result (for tests and small readers). */
    public static float value(MemorySegment rows, long dimension, int i, long j) {
        return rows.getAtIndex(ValueLayout.JAVA_FLOAT, i * dimension + j);
    }

    @Override
    public void close() throws OrtException {
        if (bound != null) {
            bound.close();
        }
        session.close();
        arena.close();
    }
}
