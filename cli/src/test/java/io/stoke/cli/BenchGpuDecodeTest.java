package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.gpu.NvjpegLibrary;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.testing.TestImages;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stoke bench --decode gpu} on the nvJPEG and CUDA test doubles: the figures, the split between
 * nvJPEG and the CPU, and the one line said where the GPU cannot decode. The doubles check the
 * command's wiring; no GPU ran.
 */
class BenchGpuDecodeTest {
    @TempDir
    Path tmp;

    @AfterEach
    void clear() {
        GpuDoubles.clear();
    }

    CudaTestDouble dbl() {
        return GpuDoubles.open("bench --decode gpu");
    }

    @Test
    void decodesOnTheGpuAndSaysHowMuchTheCpuTook() throws Exception {
        CudaTestDouble dbl = dbl();
        Path root = TestImages.imageFolder(tmp.resolve("data"), 20, 2, 4);
        ImageIO.write(
                new BufferedImage(30, 20, BufferedImage.TYPE_INT_RGB),
                "png",
                root.resolve("class00").resolve("zz.png").toFile());
        Path json = tmp.resolve("gpu.json");
        try {
            String[] r = BenchCommandTest.run(
                    "bench",
                    root.toString(),
                    "--decode",
                    "gpu",
                    "--batch-size",
                    "4",
                    "--workers",
                    "2",
                    "--resize",
                    "40",
                    "--crop",
                    "32",
                    "--json",
                    json.toString());
            assertEquals("0", r[0], r[1] + r[2]);
            assertTrue(r[2].contains("decoding on CUDA device 0 (EXPERIMENTAL) with nvJPEG"), r[2]);
            assertTrue(r[2].contains("GPU hybrid decoder"), r[2]);
            assertTrue(r[2].contains("decoder), chroma upsampled as the CPU does; "), r[2]);
            assertTrue(r[1].contains("21 in 6 batches (0 skipped or failed)"), r[1]);
            assertTrue(r[1].contains("20 images by nvJPEG (GPU hybrid), 1 left to the CPU, 0 failed"), r[1]);
            assertTrue(r[1].contains("CPU time per image"), r[1]);
            // The decode thread's wall time by phase; the device is timed only where the CPU shares the work.
            assertTrue(
                    r[1].matches("(?s).*decode thread +ms per batch: reads [0-9.]+, buffer [0-9.]+, queue [0-9.]+, "
                            + "nvJPEG host [0-9.]+, resize host [0-9.]+, CPU's part [0-9.]+, handoff [0-9.]+\n.*"),
                    r[1]);
            // The reader threads' part, per file read: the reads, nvJPEG's examination, no tables (evaluation).
            assertTrue(
                    r[1].matches("(?s).*reader threads +us per file read for the GPU, wall, all threads: read [0-9.]+, "
                            + "nvJPEG's examination [0-9.]+, training tables 0\\.0\n.*"),
                    r[1]);
            // How long the stage took to open, phase by phase.
            assertTrue(
                    r[1].matches("(?s).*stage opening +ms: context [0-9.]+, kernels [0-9.]+, buffers and threads "
                            + "[0-9.]+, nvJPEG [0-9.]+, examiners [0-9.]+, resize [0-9.]+; [0-9.]+ in all\n.*"),
                    r[1]);
            JsonNode j = new ObjectMapper().readTree(json.toFile());
            assertEquals("gpu", j.get("decode").asText(), j.toString());
            assertEquals(21, j.get("images").asLong(), j.toString());
            assertEquals(6, j.get("wait_ns").size(), j.toString());
            // And the decoder's colour check at opening: one image, one call (GpuJpegDecoder).
            assertEquals(20 + 1, dbl.nvjpegStat("nvjpeg_images"));
            assertEquals(0, dbl.nvjpegStat("live_nvjpeg_handles"));
            assertEquals(0, dbl.stat("live_device_allocs"));
        } finally {
            dbl.reset();
        }
    }

    /**
     * A restart cache is read through, not refused: the stage opens, and each epoch's row says what
     * the cache did, as the CPU path's does. Filled by {@code stoke cache} first, every JPEG is
     * served its copy.
     */
    @Test
    void aRestartCacheIsReadThroughAndEachEpochSaysWhatItDid() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        CudaTestDouble dbl = dbl();
        Path root = TestImages.imageFolder(tmp.resolve("data"), 20, 2, 4);
        Path cache = tmp.resolve("cache");
        try {
            String[] filled = BenchCommandTest.run("cache", root.toString(), "--restart-cache-dir", cache.toString());
            assertEquals("0", filled[0], filled[1] + filled[2]);
            String[] r = BenchCommandTest.run(
                    "bench",
                    root.toString(),
                    "--decode",
                    "gpu",
                    "--batch-size",
                    "4",
                    "--workers",
                    "2",
                    "--crop",
                    "32",
                    "--restart-cache-dir",
                    cache.toString());
            assertEquals("0", r[0], r[1] + r[2]);
            assertTrue(r[2].contains("decoding on CUDA device 0 (EXPERIMENTAL) with nvJPEG"), r[2]);
            assertTrue(r[1].contains("20 images by nvJPEG (GPU hybrid), 0 left to the CPU, 0 failed"), r[1]);
            assertTrue(r[1].matches("(?s).*restart cache +after epoch 0: 20 hits, 0 misses, 0 copied .*"), r[1]);
            assertEquals(0, dbl.stat("live_device_allocs"));
        } finally {
            dbl.reset();
        }
    }

    @Test
    void autoSharesTheJpegsWithTheCpuThreadsAndSaysHowMany() throws Exception {
        CudaTestDouble dbl = dbl();
        // 120 batches: the first go whole to the CPU threads while nvJPEG opens, and the GPU's after
        // share their JPEGs with them. A run of 4 could end before the GPU had timed two batches, and
        // once (CI) the CPU threads decoded all of a run of 12 in the 11 ms nvJPEG's double took to
        // open: these small JPEGs take the two threads about 0.2 ms each.
        Path root = TestImages.imageFolder(tmp.resolve("data"), 960, 2, 9);
        Path json = tmp.resolve("auto.json");
        try {
            String[] r = BenchCommandTest.run(
                    "bench",
                    root.toString(),
                    "--decode",
                    "auto",
                    "--batch-size",
                    "8",
                    "--workers",
                    "2",
                    "--crop",
                    "32",
                    "--json",
                    json.toString());
            assertEquals("0", r[0], r[1] + r[2]);
            assertTrue(r[2].contains("and whole batches or a share of the JPEGs, balanced live"), r[2]);
            assertTrue(r[1].contains("960 in 120 batches (0 skipped or failed)"), r[1]);
            assertTrue(
                    r[1].matches(
                            "(?s).*CPU's share +[0-9]+ images \\([0-9.]+%\\) decoded by the CPU threads beside the GPU: "
                                    + "[0-9]+ whole batches \\([0-9]+ while batches waited for the consumer\\), the"
                                    + " rest shares of the GPU's\n.*"),
                    r[1]);
            assertTrue(
                    r[1].matches("(?s).*decode thread +ms per batch: .*, handoff [0-9.]+; events [0-9.]+\n.*"), r[1]);
            assertTrue(
                    r[1].matches("(?s).*split from +us per image: GPU side [0-9.]+ \\(events [0-9.]+, decode thread "
                            + "[0-9.]+\\), CPU threads [0-9.]+ \\(a round's wall; a thread [0-9.]+ us a KiB; "
                            + "(no whole batch|whole batches [0-9.]+)\\)\n.*"),
                    r[1]);
            assertEquals(
                    "auto",
                    new ObjectMapper().readTree(json.toFile()).get("decode").asText());
            assertTrue(dbl.nvjpegStat("nvjpeg_images") < 960, "the CPU took some: " + dbl.nvjpegStat("nvjpeg_images"));
            assertTrue(dbl.nvjpegStat("nvjpeg_images") > 0, "the GPU took some: " + r[1]);
        } finally {
            dbl.reset();
        }
    }

    /** {@code --decode-cpu-batches 0}: no whole batch goes to the CPU threads, only shares of the GPU's. */
    @Test
    void decodeCpuBatchesZeroKeepsTheCpuToSharesOfTheGpusBatches() throws Exception {
        CudaTestDouble dbl = dbl();
        Path root = TestImages.imageFolder(tmp.resolve("data"), 64, 2, 9);
        try {
            String[] r = BenchCommandTest.run(
                    "bench",
                    root.toString(),
                    "--decode",
                    "auto",
                    "--decode-cpu-batches",
                    "0",
                    "--batch-size",
                    "4",
                    "--workers",
                    "2",
                    "--crop",
                    "32");
            assertEquals("0", r[0], r[1] + r[2]);
            assertTrue(r[1].contains("64 in 16 batches (0 skipped or failed)"), r[1]);
            assertTrue(
                    r[1].contains(" 0 whole batches (0 while batches waited for the consumer), the rest shares of"
                            + " the GPU's"),
                    r[1]);
            assertTrue(r[1].contains("; no whole batch)"), r[1]);
            assertTrue(
                    dbl.nvjpegStat("nvjpeg_images") < 64 + 1,
                    "the CPU took shares: " + dbl.nvjpegStat("nvjpeg_images"));
        } finally {
            dbl.reset();
        }
    }

    /** {@code --decode-gpu-threads 2}: each batch's nvJPEG call in two parts, and the line says so. */
    @Test
    void decodeGpuThreadsSplitsEachBatchsCallOverThem() throws Exception {
        CudaTestDouble dbl = dbl();
        Path root = TestImages.imageFolder(tmp.resolve("data"), 80, 2, 11);
        try {
            String[] r = BenchCommandTest.run(
                    "bench",
                    root.toString(),
                    "--decode",
                    "gpu",
                    "--decode-gpu-threads",
                    "2",
                    "--batch-size",
                    "40",
                    "--workers",
                    "2",
                    "--crop",
                    "32",
                    "--json",
                    tmp.resolve("t2.json").toString());
            assertEquals("0", r[0], r[1] + r[2]);
            assertTrue(r[1].contains("80 in 2 batches (0 skipped or failed)"), r[1]);
            assertTrue(
                    r[2].contains(
                            "decoder), chroma upsampled as the CPU does, each batch's call split over 2 threads; 2 CPU threads"),
                    r[2]);
            // And the decoder's colour check at opening: one image, one call.
            assertEquals(80 + 1, dbl.nvjpegStat("nvjpeg_images"), "every JPEG on the GPU");
            assertEquals(4 + 1, dbl.nvjpegStat("nvjpeg_batches"), "two calls a batch");
            assertEquals(
                    "gpu:2",
                    new ObjectMapper()
                            .readTree(tmp.resolve("t2.json").toFile())
                            .get("decode")
                            .asText());
        } finally {
            dbl.reset();
        }
    }

    @Test
    void withoutLibnvjpegItSaysSoInOneLineAndDecodesOnTheCpu() throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("data"), 8, 2, 5);
        System.setProperty(
                NvjpegLibrary.PATH_PROPERTY,
                tmp.resolve("nowhere/libnvjpeg.so.13").toString());
        Path json = tmp.resolve("cpu.json");
        String[] r = BenchCommandTest.run(
                "bench", root.toString(), "--decode", "gpu", "--batch-size", "4", "--json", json.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[2].contains("stoke: --decode gpu: ") && r[2].contains("; decoding on the CPU"), r[2]);
        assertTrue(r[1].contains("8 in 2 batches"), r[1]);
        assertEquals(
                "cpu", new ObjectMapper().readTree(json.toFile()).get("decode").asText());
    }

    @Test
    void anAugmentationPolicyAndRandomErasingDecodeOnTheGpu() throws Exception {
        assertTrainingDecodesOnTheGpu(6, "--augment", "ta_wide", "--output", "float32", "--erase", "0.5");
    }

    @Test
    void theTrainingTransformDecodesOnTheGpu() throws Exception {
        assertTrainingDecodesOnTheGpu(8, "--shuffle");
    }

    /** {@code bench --decode gpu --transform train} over 8 images (seed {@code seed}) with {@code more}: all by nvJPEG. */
    private void assertTrainingDecodesOnTheGpu(int seed, String... more) throws Exception {
        CudaTestDouble dbl = dbl();
        Path root = TestImages.imageFolder(tmp.resolve("data"), 8, 2, seed);
        List<String> args = new ArrayList<>(List.of(
                "bench",
                root.toString(),
                "--decode",
                "gpu",
                "--batch-size",
                "4",
                "--transform",
                "train",
                "--crop",
                "32"));
        args.addAll(List.of(more));
        try {
            String[] r = BenchCommandTest.run(args.toArray(String[]::new));
            assertEquals("0", r[0], r[1] + r[2]);
            assertTrue(r[1].contains("8 images by nvJPEG (GPU hybrid), 0 left to the CPU, 0 failed"), r[1] + r[2]);
        } finally {
            dbl.reset();
        }
    }

    @Test
    void aDeviceThatIsNoCudaOrdinalIsSaid() throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("data"), 4, 2, 10);
        String[] r = BenchCommandTest.run("bench", root.toString(), "--decode", "gpu", "--device", "cuda:x");
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[1] + r[2]);
        assertTrue(r[2].contains("--device must be host, auto, cuda or cuda:N, not cuda:x"), r[2]);
    }

    @Test
    void anUnknownDecodeIsAUsageError() throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("data"), 4, 2, 7);
        String[] r = BenchCommandTest.run("bench", root.toString(), "--decode", "fpga");
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], r[1] + r[2]);
        assertTrue(r[2].contains("--decode") && r[2].contains("fpga"), r[2]);
    }
}
