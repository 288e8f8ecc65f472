package io.stoke.embed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import com.sun.management.ThreadMXBean;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.testdata.SyntheticImageNet;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The embedder against independent references: ONNX Runtime run on a heap copy of the same
 * pixels (exact), and PyTorch on torchvision's preprocessing (a reference computed once by
 * {@code models/export_tiny_cnn.py} and committed).
 */
class EmbedderTest {
    static final Path MODELS = Path.of("models");
    static final Path F32 = MODELS.resolve("tiny_cnn_f32.onnx");
    static final Path U8 = MODELS.resolve("tiny_cnn_u8.onnx");

    @TempDir
    static Path tmp;

    static Dataset dataset;

    @BeforeAll
    static void dataset() {
        dataset = referenceDataset(tmp);
    }

    /** The dataset the committed reference was computed on (make-dataset --images 12 --seed 21 --classes 3), under {@code tmp}. */
    static Dataset referenceDataset(Path tmp) {
        Path root = tmp.resolve("data");
        SyntheticImageNet.generate(root, new SyntheticImageNet.Options(12, 3, 21));
        return ImageFolder.scan(root);
    }

    static Loader loader(Embedder e, int batch) {
        return loader(dataset, e, batch);
    }

    /** A loader of {@code dataset} with {@code e}'s transform, without DCT scaling (the reference's decode). */
    static Loader loader(Dataset dataset, Embedder e, int batch) {
        TransformSpec spec =
                e.contract().transform(TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE));
        return Loader.builder(dataset)
                .transform(spec)
                .batchSize(batch)
                .workers(2)
                .build();
    }

    /**
     * The process's CPU time and its decoding threads' are counted over one window, from the mark
     * taken before the source's threads start: decoding done before the run (the ring's first slots,
     * filled while the output was made) counts in both. With the process counted from the run's
     * start, "of which decoding" exceeded the process's CPU time per image.
     */
    @Test
    void decodingCpuIsCountedOverTheProcesssWindow() throws Exception {
        try (Embedder embedder = Embedder.open(F32, 1, InferenceDevice.CPU, "embedding")) {
            long mark = EmbeddingJob.processCpuNanos();
            CountDownLatch worked = new CountDownLatch(1);
            CountDownLatch end = new CountDownLatch(1);
            // A decoding thread of the source's that works before the run, then idles through it.
            Thread early = new Thread(
                    () -> {
                        java.lang.management.ThreadMXBean cpu =
                                java.lang.management.ManagementFactory.getThreadMXBean();
                        long x = 0;
                        while (cpu.getCurrentThreadCpuTime() < 500_000_000L) {
                            x += x * 31 + 7;
                        }
                        worked.countDown();
                        try {
                            end.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    },
                    "stoke-worker-early");
            early.start();
            try (Loader loader = loader(embedder, 4)) {
                worked.await();
                EmbeddingSink none = new EmbeddingSink() {
                    @Override
                    public void writeRows(long first, int count, MemorySegment values) {}

                    @Override
                    public void skip(long row, String path, String reason) {}
                };
                int[] rows = EmbeddingJob.rows(loader.sampler(), 0);
                EmbeddingJob.Figures f = EmbeddingJob.run(loader, embedder, none, rows, mark, done -> {});
                assertEquals(12, f.images());
                // Both hold the early thread's 0.5 s; the process's time comes in the kernel's 10 ms ticks.
                assertTrue(
                        f.decodeNanos() >= 500_000_000L && f.decodeNanos() <= f.cpuNanos() + 20_000_000L,
                        "decoding " + f.decodeNanos() + " ns of the process's " + f.cpuNanos() + " ns");
            } finally {
                end.countDown();
                early.join();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny_cnn_f32.onnx", "tiny_cnn_u8.onnx"})
    void embeddingsEqualOnnxRuntimeOnAHeapCopyOfTheSamePixels(String model) throws Exception {
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        try (Embedder embedder = Embedder.open(MODELS.resolve(model), 1, InferenceDevice.CPU, "embedding");
                OrtSession reference =
                        env.createSession(MODELS.resolve(model).toString(), new OrtSession.SessionOptions());
                Loader loader = loader(embedder, 5)) {
            ModelContract c = embedder.contract();
            int checked = 0;
            for (Batch b : loader) {
                try (b) {
                    float[] got = embedder.embed(b).toArray(ValueLayout.JAVA_FLOAT);
                    OnnxTensor input = c.layout() == ModelContract.Layout.FLOAT32_NCHW
                            ? OnnxTensor.createTensor(
                                    env, FloatBuffer.wrap(b.pixels().toArray(ValueLayout.JAVA_FLOAT)), b.shape())
                            : OnnxTensor.createTensor(
                                    env,
                                    ByteBuffer.wrap(b.pixels().toArray(ValueLayout.JAVA_BYTE)),
                                    b.shape(),
                                    OnnxJavaType.UINT8);
                    try (input;
                            OrtSession.Result r = reference.run(Map.of(c.inputName(), input))) {
                        float[][] expected =
                                (float[][]) r.get("embedding").orElseThrow().getValue();
                        for (int i = 0; i < b.size(); i++) {
                            float[] row =
                                    Arrays.copyOfRange(got, (int) (i * c.dimension()), (int) ((i + 1) * c.dimension()));
                            assertArrayEquals(expected[i], row, 0f, "sample " + b.index(i));
                            checked++;
                        }
                    }
                }
            }
            assertEquals(12, checked);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny_cnn_f32.onnx", "tiny_cnn_u8.onnx"})
    void embeddingsEqualPyTorchOnTorchvisionsPreprocessing(String model) throws Exception {
        Npy reference = Npy.read(MODELS.resolve("reference_f32.npy"));
        assertEquals(12, reference.rows);
        try (Embedder embedder = Embedder.open(MODELS.resolve(model), 1, InferenceDevice.CPU, "embedding");
                Loader loader = loader(embedder, 4)) {
            long d = embedder.contract().dimension();
            assertEquals(reference.columns, d);
            double worst = 0;
            for (Batch b : loader) {
                try (b) {
                    MemorySegment rows = embedder.embed(b);
                    for (int i = 0; i < b.size(); i++) {
                        long sample = b.index(i);
                        double scale = 0;
                        for (long j = 0; j < d; j++) {
                            scale = Math.max(scale, Math.abs(reference.get(sample, j)));
                        }
                        for (long j = 0; j < d; j++) {
                            double diff = Math.abs(Embedder.value(rows, d, i, j) - reference.get(sample, j));
                            worst = Math.max(worst, diff / scale);
                        }
                    }
                }
            }
            assertTrue(worst < 1e-4, "largest difference from PyTorch, relative to the row's largest value: " + worst);
        }
    }

    /** A heap copy of a batch's pixels would allocate at least their size; a run allocates a small fraction of one image. */
    @Test
    void aRunCopiesNoPixelsOntoTheHeap() throws Exception {
        var threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().threadId();
        try (Embedder embedder = Embedder.open(F32, 1, InferenceDevice.CPU, "embedding");
                Loader loader = loader(embedder, 6)) {
            long sampleBytes = 3L * 224 * 224 * 4;
            int runs = 0;
            for (Batch b : loader) {
                try (b) {
                    embedder.embed(b); // the first run loads classes and warms up
                    long before = threads.getThreadAllocatedBytes(tid);
                    embedder.embed(b);
                    long allocated = threads.getThreadAllocatedBytes(tid) - before;
                    assertTrue(
                            allocated < sampleBytes / 8,
                            "one run over " + b.size() + " images ("
                                    + b.pixels().byteSize() + " bytes of pixels) allocated " + allocated
                                    + " bytes on the heap");
                    runs++;
                }
            }
            assertEquals(2, runs);
        }
    }

    @Test
    void theContractIsReadFromTheModel() throws Exception {
        try (Embedder f = Embedder.open(F32, 1, InferenceDevice.CPU, "embedding");
                Embedder u = Embedder.open(U8, 1, InferenceDevice.CPU, null)) {
            assertEquals(
                    new ModelContract(
                            "images", ModelContract.Layout.FLOAT32_NCHW, 224, "embedding", 32, ModelPreprocess.NONE),
                    f.contract());
            assertEquals(
                    new ModelContract(
                            "pixels", ModelContract.Layout.UINT8_NHWC, 224, "embedding", 32, ModelPreprocess.NONE),
                    u.contract());
            assertEquals(
                    TransformSpec.Output.UINT8_HWC,
                    u.contract().transform(TransformSpec.defaults()).output());
            // The run's --mean and --std reach a float32 model (CLIP's, for open_clip's towers), where
            // ImageNet's were once put in their place.
            float[] clipMean = {0.48145466f, 0.4578275f, 0.40821073f};
            float[] clipStd = {0.26862954f, 0.26130258f, 0.27577711f};
            TransformSpec clip = f.contract().transform(TransformSpec.defaults().withNormalization(clipMean, clipStd));
            assertEquals(TransformSpec.Output.FLOAT32_CHW, clip.output());
            assertArrayEquals(clipMean, clip.mean());
            assertArrayEquals(clipStd, clip.std());
            IllegalArgumentException crop = assertThrows(
                    IllegalArgumentException.class,
                    () -> f.contract().transform(TransformSpec.defaults().withResize(160, 128)));
            assertTrue(crop.getMessage().contains("--crop 224"), crop.getMessage());
        }
        IllegalArgumentException two =
                assertThrows(IllegalArgumentException.class, () -> Embedder.open(F32, 1, InferenceDevice.CPU, null));
        assertTrue(two.getMessage().contains("--output-name"), two.getMessage());
        IllegalArgumentException none =
                assertThrows(IllegalArgumentException.class, () -> Embedder.open(F32, 1, InferenceDevice.CPU, "nope"));
        assertTrue(none.getMessage().contains("embedding") && none.getMessage().contains("logits"), none.getMessage());
    }
}
