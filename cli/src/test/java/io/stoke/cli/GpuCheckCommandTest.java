package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.testing.CudaTestDouble;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

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
