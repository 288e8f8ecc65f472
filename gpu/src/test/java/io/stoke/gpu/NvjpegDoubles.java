package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.testing.CudaTestDouble;

/**
 * The CUDA and nvJPEG test doubles for this module's GPU decode tests: opened and reset, or, where
 * the build could not make them, the test skipped, saying why. They check wiring; no GPU runs.
 */
final class NvjpegDoubles {
    /** What the doubles count of nvJPEG's objects still open: each is 0 once a test has closed all it opened. */
    private static final String[] LIVE = {"live_nvjpeg_handles", "live_nvjpeg_states", "live_nvjpeg_streams"};

    private NvjpegDoubles() {}

    /** The doubles, reset; {@code what} names the tests skipped without them. */
    static CudaTestDouble open(String what) {
        String reason = CudaTestDouble.nvjpegUnavailableReason(DeviceStageTest.DOUBLE_DIR);
        if (reason != null) {
            System.err.println("[stoke] SKIPPING " + what + " tests: " + reason);
        }
        assumeTrue(reason == null, reason);
        CudaTestDouble dbl = CudaTestDouble.open(DeviceStageTest.DOUBLE_DIR);
        dbl.reset();
        return dbl;
    }

    /** Asserts that every nvJPEG handle, state and stream {@code dbl} made is destroyed. */
    static void assertNoneLive(CudaTestDouble dbl) {
        for (String live : LIVE) {
            assertEquals(0, dbl.nvjpegStat(live), live);
        }
    }
}
