package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.gpu.NvjpegLibrary;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code stoke gpu-check} without a driver (exit 4, one line) and on the CUDA test double. */
class GpuCheckCommandTest {
    static final Path DOUBLE_DIR = Path.of("target", "cuda-double");
    private final String oldPath = System.getProperty(CudaDriver.PATH_PROPERTY);

    @AfterEach
    void restore() {
        if (oldPath == null) {
            System.clearProperty(CudaDriver.PATH_PROPERTY);
        } else {
            System.setProperty(CudaDriver.PATH_PROPERTY, oldPath);
        }
    }

    record Run(int code, String out, String err) {}

    static Run run(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
            int code = Main.execute(args);
            return new Run(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    @Test
    void withoutADriverItSaysSoInOneLineAndExitsWith3() {
        System.setProperty(CudaDriver.PATH_PROPERTY, "/nonexistent/libcuda.so.1");
        Run r = run("gpu-check");
        assertEquals(Main.EXIT_NO_DEVICE, r.code(), r.err());
        // Only the nvJPEG line comes before the device (what it says depends on this machine's nvJPEG).
        assertEquals(1, r.out().lines().count(), r.out());
        assertTrue(r.out().startsWith("nvjpeg     "), r.out());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().startsWith("stoke gpu-check: no CUDA driver found"), r.err());
    }

    @Test
    void onTheTestDoubleEveryCheckRunsAndPasses() {
        String reason = CudaTestDouble.unavailableReason(DOUBLE_DIR);
        if (reason != null) {
            System.err.println("[stoke] SKIPPING gpu-check on the double: " + reason);
        }
        assumeTrue(reason == null, reason);
        CudaTestDouble dbl = CudaTestDouble.open(DOUBLE_DIR);
        dbl.reset();
        System.setProperty(CudaDriver.PATH_PROPERTY, dbl.library().toString());
        Run r = run(
                "gpu-check",
                "--mib",
                "1",
                "--iterations",
                "3",
                "--compute-ms",
                "20",
                "--stage-batch",
                "4",
                "--stage-crop",
                "32");
        assertEquals(0, r.code(), r.out() + r.err());
        String out = r.out();
        assertTrue(out.contains("test double"), out);
        assertTrue(out.contains("patterns   12 batches") && out.contains(": OK"), out);
        assertTrue(
                out.contains("normalise  uint8 NHWC -> float32 NCHW kernel vs CPU reference: OK (bit-identical)"), out);
        assertTrue(out.contains("pinned") && out.contains("pageable") && out.contains("GB/s"), out);
        assertTrue(
                out.contains(
                        "stage      12 batches of 4 x 32x32x3 uint8 (0.0 MB) from pinned ring slots through the GPU"
                                + " stage: "),
                out);
        assertTrue(out.contains("overlap") && out.contains("hidden"), out);
        assertTrue(out.contains("result     all checks passed"), out);
        assertEquals(
                0, dbl.stat("pageable_async_copies"), "the stage and the pinned measurement copy from pinned memory");
        assertEquals(0, dbl.stat("live_device_allocs"));
        assertEquals(0, dbl.stat("live_pinned_ranges"));
        assertEquals(0, dbl.stat("primary_retains"));
        dbl.reset();
    }

    /**
     * {@code --decode DIR} on the CUDA and nvJPEG doubles: the files under DIR go through nvJPEG's
     * batched decode and come back equal to TurboJPEG's (the double decodes with libjpeg: 0 is the
     * only right difference there, and says the wiring is right, not nvJPEG's pixels); a PNG named
     * .jpg is left to the CPU with its reason, and files not named as JPEGs are not taken at all.
     */
    @Test
    void decodeComparesNvjpegWithTurboJpegOnTheFilesOfAFolder(@TempDir Path dir) throws IOException {
        String reason = CudaTestDouble.nvjpegUnavailableReason(DOUBLE_DIR);
        if (reason != null) {
            System.err.println("[stoke] SKIPPING gpu-check --decode on the double: " + reason);
        }
        assumeTrue(reason == null, reason);
        Files.createDirectories(dir.resolve("a"));
        for (int i = 0; i < 5; i++) {
            BufferedImage img = new BufferedImage(40 + 7 * i, 30 + 3 * i, BufferedImage.TYPE_INT_RGB);
            for (int y = 0; y < img.getHeight(); y++) {
                for (int x = 0; x < img.getWidth(); x++) {
                    img.setRGB(x, y, (x * 5 + i) << 16 | (y * 7) << 8 | (x + y) * 3);
                }
            }
            ImageIO.write(
                    img,
                    "jpeg",
                    dir.resolve(i % 2 == 0 ? "a" : ".")
                            .resolve("img" + i + ".JPG")
                            .toFile());
        }
        ImageIO.write(
                new BufferedImage(8, 8, BufferedImage.TYPE_INT_RGB),
                "png",
                dir.resolve("fake.jpeg").toFile());
        ImageIO.write(
                new BufferedImage(8, 8, BufferedImage.TYPE_INT_RGB),
                "png",
                dir.resolve("real.png").toFile());
        CudaTestDouble dbl = CudaTestDouble.open(DOUBLE_DIR);
        dbl.reset();
        System.setProperty(CudaDriver.PATH_PROPERTY, dbl.library().toString());
        System.setProperty(NvjpegLibrary.PATH_PROPERTY, dbl.library().toString());
        try {
            Run r = run(
                    "gpu-check",
                    "--mib",
                    "1",
                    "--iterations",
                    "1",
                    "--compute-ms",
                    "1",
                    "--stage-batch",
                    "2",
                    "--stage-crop",
                    "8",
                    "--decode",
                    dir.toString(),
                    "--decode-batch",
                    "4");
            assertEquals(0, r.code(), r.out() + r.err());
            String out = r.out();
            assertTrue(
                    out.startsWith("nvjpeg     nvJPEG 13.0.0 from " + dbl.library() + " (-Dstoke.nvjpeg.path)\n"), out);
            assertTrue(
                    out.contains("decode     6 JPEGs under " + dir
                            + ": 5 decoded by nvJPEG (GPU_HYBRID), 1 left to the CPU\n"),
                    out);
            assertTrue(out.contains("nvJPEG's hardware decoder is not available on this device"), out);
            assertTrue(
                    out.contains("           1 x nvJPEG cannot read it as a JPEG (nvjpegGetImageInfo: "
                            + "NVJPEG_STATUS_BAD_JPEG)\n"),
                    out);
            assertTrue(out.contains("pixels vs TurboJPEG's full-size decode: mean |diff| 0.0000, largest 0\n"), out);
            assertTrue(out.contains("rate: nvJPEG ") && out.contains("images/s (batches of 4)"), out);
            assertTrue(
                    out.contains("vs the CPU resampler on the same decoded pixels: OK (" + 5 * 224 * 224 * 3
                            + " bytes, identical)\n"),
                    out);
            assertEquals(0, dbl.stat("kernel_faults"));
            // The stage against the loader: the double decodes with libjpeg, so full-size decodes are equal.
            assertTrue(
                    out.contains("             vs --dct-scaling none (full-size decodes): 5 images, mean |diff| 0.0000,"
                            + " largest 0; every image within 2 levels\n"),
                    out);
            assertTrue(out.contains("             vs the loader's default (DCT scaling "), out);
            assertTrue(out.contains("result     all checks passed"), out);
            // Each of the two decoders opened also decodes its colour check's one image, in one call.
            assertEquals(5 + 5 + 2, dbl.nvjpegStat("nvjpeg_images"), "the decoders' comparison, then the stage's");
            assertEquals(2 + 2 + 2, dbl.nvjpegStat("nvjpeg_batches"), "6 files in batches of 4, twice");
            assertEquals(0, dbl.nvjpegStat("live_nvjpeg_handles"));
            assertEquals(0, dbl.stat("live_device_allocs"));
        } finally {
            System.clearProperty(NvjpegLibrary.PATH_PROPERTY);
            dbl.reset();
        }
    }

    @Test
    void decodeOfAFolderWithoutJpegsIsAUsageError(@TempDir Path dir) {
        Run r = run("gpu-check", "--decode", dir.toString());
        assertEquals(Main.EXIT_USAGE, r.code());
        assertEquals("stoke gpu-check: --decode " + dir + " holds no .jpg or .jpeg file\n", r.err());
    }

    @Test
    void aDriverWithoutDevicesAlsoExitsWith3() {
        String reason = CudaTestDouble.unavailableReason(DOUBLE_DIR);
        assumeTrue(reason == null, reason);
        CudaTestDouble dbl = CudaTestDouble.open(DOUBLE_DIR);
        dbl.deviceCount(0);
        try {
            System.setProperty(CudaDriver.PATH_PROPERTY, dbl.library().toString());
            Run r = run("gpu-check");
            assertEquals(Main.EXIT_NO_DEVICE, r.code());
            assertTrue(r.err().contains("reports 0 device(s)"), r.err());
        } finally {
            dbl.reset();
        }
    }
}
