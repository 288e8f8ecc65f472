package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.embed.Embedder;
import io.stoke.embed.EmbeddingJob;
import io.stoke.embed.InferenceDevice;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.gpu.DeviceBatch;
import io.stoke.gpu.GpuDecodeOpening;
import io.stoke.gpu.GpuDecodeStage;
import io.stoke.gpu.NvjpegLibrary;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.testing.BadImages;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.awt.image.BufferedImage;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stoke embed --decode gpu|auto} on the nvJPEG and CUDA test doubles, against the same run
 * decoded by the CPU workers: the rows, their order, skipped files, padding left out over ranks. The
 * doubles decode with libjpeg-turbo and run the CUDA kernels' source on the host, so the embeddings
 * must match the CPU run's; they check the command's wiring, and no GPU ran.
 */
class EmbedGpuDecodeTest {
    @TempDir
    Path tmp;

    @AfterEach
    void clear() {
        GpuDoubles.clear();
    }

    CudaTestDouble dbl() {
        return GpuDoubles.open("embed --decode gpu");
    }

    /** {@code stoke embed DATA --model MODEL --out tmp/NAME ARGS...}, which must exit 0; its stderr. */
    private String embed(Path data, String model, String name, String... args) {
        List<String> all = new ArrayList<>(List.of(
                "embed",
                data.toString(),
                "--model",
                model,
                "--out",
                tmp.resolve(name).toString(),
                "--workers",
                "2"));
        all.addAll(List.of(args));
        String[] r = BenchCommandTest.run(all.toArray(String[]::new));
        assertEquals("0", r[0], r[1] + r[2]);
        return r[2];
    }

    @Test
    void uint8RowsEqualTheCpuRunsWithSkippedFilesAndWhatNvjpegLeaves() throws Exception {
        CudaTestDouble dbl = dbl();
        Path data = TestImages.imageFolder(tmp.resolve("data"), 9, 2, 3);
        ImageIO.write(
                new BufferedImage(30, 20, BufferedImage.TYPE_INT_RGB),
                "png",
                data.resolve("class00").resolve("zz.png").toFile());
        BadImages.allBadFolder(data);
        String[] policy = {"--on-error", "skip", "--batch-size", "4", "--dct-scaling", "none"};
        embed(data, EmbedCommandTest.U8, "cpu", policy);
        String said = embed(data, EmbedCommandTest.U8, "gpu", concat(policy, "--decode", "gpu"));
        assertTrue(said.contains("stoke embed: decoding on CUDA device 0 (EXPERIMENTAL) with nvJPEG"), said);
        assertTrue(dbl.nvjpegStat("nvjpeg_images") > 0, "nvJPEG decoded");
        assertEquals(0, dbl.nvjpegStat("live_nvjpeg_handles"), "the stage closed nvJPEG");
        assertEquals(0, dbl.stat("pageable_async_copies"), "copies from pinned memory only");
        assertEquals(read("cpu/paths.txt"), read("gpu/paths.txt"));
        List<String> skipped = read("gpu/skipped.txt");
        assertFalse(skipped.isEmpty(), "the bad files are listed");
        assertEquals(read("cpu/skipped.txt"), skipped);
        float[][] cpu = EmbedCommandTest.npy(tmp.resolve("cpu/embeddings.npy"), 32);
        float[][] gpu = EmbedCommandTest.npy(tmp.resolve("gpu/embeddings.npy"), 32);
        assertEquals(cpu.length, gpu.length);
        for (int i = 0; i < cpu.length; i++) {
            assertArrayEquals(cpu[i], gpu[i], "row " + i);
        }
    }

    @Test
    void float32RowsOfAShuffledAutoRunOverTwoRanksEqualTheCpuRunsLeavingThePaddingOut() throws Exception {
        CudaTestDouble dbl = dbl();
        Path data = TestImages.imageFolder(tmp.resolve("odd"), 7, 2, 5);
        int rows = 0;
        for (int rank = 0; rank < 2; rank++) {
            String[] args = {
                "--output-name",
                "embedding",
                "--dct-scaling",
                "none",
                "--rank",
                Integer.toString(rank),
                "--world-size",
                "2",
                "--shuffle",
                "--seed",
                "2",
                "--batch-size",
                "2"
            };
            embed(data, EmbedCommandTest.F32, "cpu" + rank, args);
            // Shares only: with whole batches, a rank's two batches could both go to the CPU threads
            // while nvJPEG opens, and nvJPEG would decode none of them.
            embed(
                    data,
                    EmbedCommandTest.F32,
                    "auto" + rank,
                    concat(args, "--decode", "auto", "--decode-cpu-batches", "0"));
            float[][] cpu = EmbedCommandTest.npy(tmp.resolve("cpu" + rank + "/embeddings.npy"), 32);
            float[][] gpu = EmbedCommandTest.npy(tmp.resolve("auto" + rank + "/embeddings.npy"), 32);
            assertEquals(rank == 0 ? 4 : 3, gpu.length, "rank " + rank + ": rank 1's last position is padding");
            assertEquals(read("cpu" + rank + "/paths.txt"), read("auto" + rank + "/paths.txt"));
            for (int i = 0; i < cpu.length; i++) {
                for (int j = 0; j < 32; j++) {
                    // Normalised on the device (float arithmetic) or by the CPU's table: the last bits.
                    assertEquals(cpu[i][j], gpu[i][j], 1e-4 * Math.max(1, Math.abs(cpu[i][j])), "row " + i);
                }
            }
            rows += gpu.length;
        }
        assertEquals(7, rows);
        assertTrue(dbl.nvjpegStat("nvjpeg_images") > 0, "nvJPEG decoded");
    }

    /**
     * {@code EmbedCommand.onDevice}, the {@code --device cuda} path, on the doubles' device batches
     * with ONNX Runtime's CPU package: its session cannot read device memory, so the first batch is
     * refused in ONNX Runtime's words, said once, and every batch goes through the host, with the
     * rows the host loader's batches give. The read on the device itself needs a GPU and the CUDA
     * package (BoundRunTest holds the binding on the CPU).
     */
    @Test
    void onDeviceSaysOnceWhenTheSessionCannotReadDeviceMemoryAndEmbedsThroughTheHost() throws Exception {
        CudaTestDouble dbl = dbl();
        Path data = TestImages.imageFolder(tmp.resolve("data"), 7, 2, 3);
        try (Embedder embedder = Embedder.open(Path.of(EmbedCommandTest.U8), 1, InferenceDevice.CPU, null)) {
            TransformSpec transform = embedder.contract()
                    .transform(TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE));
            Loader.Builder settings =
                    Loader.imageFolder(data).batchSize(3).workers(1).transform(transform);
            List<float[]> want = new ArrayList<>();
            try (Loader loader = settings.build()) {
                for (Batch b : loader) {
                    try (b) {
                        rows(embedder.embed(b.pixels(), b.shape()), b.size(), want);
                    }
                }
            }
            StringWriter said = new StringWriter();
            List<float[]> got = new ArrayList<>();
            try (GpuDecodeStage stage =
                    GpuDecodeOpening.open(settings, GpuDecodeOpening.Decode.GPU, 0, 2, 3, 1, true, line -> {})) {
                assertNotNull(stage, "the stage opens on the doubles");
                EmbeddingJob.Inference<DeviceBatch> inference =
                        EmbedCommand.onDevice(stage, embedder, 3, new PrintWriter(said, true));
                for (DeviceBatch next; (next = stage.next()) != null; ) {
                    try (DeviceBatch b = next) {
                        rows(inference.embed(b), b.size(), got);
                    }
                }
            }
            assertTrue(dbl.nvjpegStat("nvjpeg_images") > 0, "nvJPEG decoded");
            List<String> lines = said.toString().lines().toList();
            assertEquals(1, lines.size(), said.toString());
            assertTrue(
                    lines.get(0)
                                    .startsWith(
                                            "stoke embed: WARNING: ONNX Runtime cannot read the batches in device memory")
                            && lines.get(0).contains("embedOnDevice needs a session on CUDA"),
                    lines.get(0));
            assertEquals(want.size(), got.size());
            for (int i = 0; i < want.size(); i++) {
                assertArrayEquals(want.get(i), got.get(i), "row " + i);
            }
        }
    }

    private static void rows(MemorySegment rows, int n, List<float[]> into) {
        int dimension = (int) (rows.byteSize() / Float.BYTES / n);
        for (int i = 0; i < n; i++) {
            into.add(rows.asSlice((long) i * dimension * Float.BYTES, (long) dimension * Float.BYTES)
                    .toArray(ValueLayout.JAVA_FLOAT));
        }
    }

    @Test
    void withoutLibnvjpegItSaysSoInOneLineAndDecodesOnTheCpu() throws Exception {
        dbl();
        System.setProperty(
                NvjpegLibrary.PATH_PROPERTY,
                tmp.resolve("nowhere/libnvjpeg.so.13").toString());
        Path data = TestImages.imageFolder(tmp.resolve("data"), 4, 2, 3);
        String said = embed(data, EmbedCommandTest.U8, "cpu", "--decode", "gpu");
        assertEquals(1, said.lines().filter(l -> l.contains("--decode gpu")).count(), said);
        assertTrue(said.contains("stoke embed: --decode gpu: ") && said.contains("decoding on the CPU"), said);
        assertEquals(4, EmbedCommandTest.npy(tmp.resolve("cpu/embeddings.npy"), 32).length);
    }

    private List<String> read(String file) throws Exception {
        return Files.readAllLines(tmp.resolve(file));
    }

    private static String[] concat(String[] a, String... b) {
        String[] all = new String[a.length + b.length];
        System.arraycopy(a, 0, all, 0, a.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
