package io.stoke.embed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.onnxruntime.OrtEnvironment;
import io.stoke.ffm.OnnxRuntimeApi;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.source.Dataset;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The IO-binding path (ONNX Runtime's C API by FFM, {@link BoundRun}) against ONNX Runtime's own
 * Java API on the same session and pixels: the same embeddings, bit for bit. The input here is host
 * memory bound as "Cpu", so each C API member it calls runs in the real library; on a GPU the
 * same path binds a device batch as "Cuda" (docs/gpu.md: not run on a GPU yet).
 */
class BoundRunTest {
    @TempDir
    static Path tmp;

    static Dataset dataset;

    @BeforeAll
    static void dataset() {
        dataset = EmbedderTest.referenceDataset(tmp);
    }

    private static Loader loader(Embedder e, int batch) {
        return EmbedderTest.loader(dataset, e, batch);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny_cnn_f32.onnx", "tiny_cnn_u8.onnx"})
    void boundRunsGiveTheJavaApisEmbeddingsBitForBit(String model) throws Exception {
        try (Embedder embedder =
                        Embedder.open(EmbedderTest.MODELS.resolve(model), 1, InferenceDevice.CPU, "embedding");
                Loader loader = loader(embedder, 5)) {
            int checked = 0;
            for (Batch b : loader) { // 5, 5 and 2 samples: the output's shape changes between runs
                try (b) {
                    float[] viaJava = embedder.embed(b).toArray(ValueLayout.JAVA_FLOAT);
                    MemorySegment pixels = b.pixels();
                    float[] bound = embedder.embedBound(pixels.address(), pixels.byteSize(), b.shape(), "Cpu", 0)
                            .toArray(ValueLayout.JAVA_FLOAT);
                    assertEquals(b.size() * embedder.contract().dimension(), bound.length);
                    assertArrayEquals(viaJava, bound, 0f, "batch " + b.batchIndex());
                    checked += b.size();
                }
            }
            assertEquals(12, checked);
        }
    }

    @Test
    void theCApiIsTheLibraryTheJavaApiLoaded() {
        assertEquals(OrtEnvironment.getEnvironment().getVersion(), BoundRun.version());
    }

    @Test
    void aFailedCallSaysOnnxRuntimesCodeAndMessage() {
        OrtEnvironment.getEnvironment();
        OnnxRuntimeApi api = BoundRun.api();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = api.createStatus(2, arena.allocateFrom("the shape is wrong"));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> api.check(status, "BindInput"));
            assertEquals("ONNX Runtime's BindInput failed (OrtErrorCode 2): the shape is wrong", e.getMessage());
        }
        api.check(MemorySegment.NULL, "anything"); // success: no throw
    }

    /** A refused run (here an input whose shape the model does not take) is an exception, and the next run works. */
    @Test
    void aRefusedRunThrowsItsMessageAndTheNextRunWorks() throws Exception {
        IllegalStateException e = refusedThenBoundAsTheJavaApi((embedder, b) -> {
            MemorySegment pixels = b.pixels();
            long[] shape = b.shape();
            // The same bytes, a channel more per image and fewer images: within the memory given.
            long[] wrong = {1, shape[1] + 1, shape[2], shape[3]};
            embedder.embedBound(pixels.address(), pixels.byteSize(), wrong, "Cpu", 0);
        });
        assertTrue(e.getMessage().startsWith("ONNX Runtime's RunWithBinding failed"), e.getMessage());
    }

    /** Device memory where ONNX Runtime has no CUDA provider (the CPU package): refused in its words, nothing read. */
    @Test
    void cudaMemoryWithoutTheCudaProviderIsRefused() throws Exception {
        try (Embedder embedder = Embedder.open(EmbedderTest.F32, 1, InferenceDevice.CPU, "embedding");
                Arena arena = Arena.ofConfined()) {
            MemorySegment pixels = arena.allocate(4L * 2 * 3 * 64 * 64);
            IllegalStateException e = assertThrows(
                    IllegalStateException.class,
                    () -> embedder.embedBound(
                            pixels.address(), pixels.byteSize(), new long[] {2, 3, 64, 64}, "Cuda", 0));
            // ONNX Runtime took the memory as a GPU's (DeviceType 1) of NVIDIA's (VendorId 0x10de),
            // and has nothing that moves it to where the CPU session runs.
            assertTrue(e.getMessage().startsWith("ONNX Runtime's BindInput failed"), e.getMessage());
            assertTrue(e.getMessage().contains("no data transfer registered"), e.getMessage());
            assertTrue(
                    e.getMessage().contains("DeviceType:1") && e.getMessage().contains("VendorId:4318"),
                    e.getMessage());
        }
    }

    /** A run in other memory than the last one's is bound again, not read as the last one's memory. */
    @Test
    void aRunInOtherMemoryIsBoundAgain() throws Exception {
        refusedThenBoundAsTheJavaApi((embedder, b) ->
                embedder.embedBound(b.pixels().address(), b.pixels().byteSize(), b.shape(), "Cuda", 0));
    }

    /**
     * On the first batch of the float32 model's loader: {@code refused} throws, and the next run,
     * bound as "Cpu", gives the Java API's embeddings bit for bit. Returns what {@code refused} threw.
     */
    private static IllegalStateException refusedThenBoundAsTheJavaApi(BiConsumer<Embedder, Batch> refused)
            throws Exception {
        try (Embedder embedder = Embedder.open(EmbedderTest.F32, 1, InferenceDevice.CPU, "embedding");
                Loader loader = loader(embedder, 4);
                Batch b = loader.iterator().next()) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> refused.accept(embedder, b));
            MemorySegment pixels = b.pixels();
            float[] viaJava = embedder.embed(b).toArray(ValueLayout.JAVA_FLOAT);
            float[] bound = embedder.embedBound(pixels.address(), pixels.byteSize(), b.shape(), "Cpu", 0)
                    .toArray(ValueLayout.JAVA_FLOAT);
            assertArrayEquals(viaJava, bound, 0f);
            return e;
        }
    }

    @Test
    void deviceRunsNeedASessionOnCuda() throws Exception {
        try (Embedder embedder = Embedder.open(EmbedderTest.F32, 1, InferenceDevice.CPU, "embedding")) {
            IllegalStateException e = assertThrows(
                    IllegalStateException.class,
                    () -> embedder.embedOnDevice(1L << 20, 1 << 20, new long[] {1, 3, 8, 8}));
            assertEquals("embedOnDevice needs a session on CUDA, not on cpu", e.getMessage());
        }
    }

    @Test
    void inputMemoryShorterThanTheShapeIsRefusedBeforeOnnxRuntime() throws Exception {
        try (Embedder embedder = Embedder.open(EmbedderTest.F32, 1, InferenceDevice.CPU, "embedding");
                Arena arena = Arena.ofConfined()) {
            MemorySegment small = arena.allocate(64);
            IllegalStateException e = assertThrows(
                    IllegalStateException.class,
                    () -> embedder.embedBound(small.address(), small.byteSize(), new long[] {1, 3, 64, 64}, "Cpu", 0));
            assertTrue(e.getMessage().startsWith("the batch's pixels hold 64 bytes"), e.getMessage());
        }
    }
}
