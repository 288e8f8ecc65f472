package io.stoke.cli;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.gpu.NvjpegLibrary;

/**
 * The nvJPEG and CUDA test doubles for the commands' GPU decode tests: opened, reset, and named as
 * the driver and libnvjpeg of this JVM's commands (the properties {@link #clear} removes); where the
 * build could not make them, the test skips, saying why. They check wiring; no GPU runs.
 */
final class GpuDoubles {
    private GpuDoubles() {}

    /** The doubles, reset, with this JVM's commands pointed at them; {@code what} names the tests skipped without them. */
    static CudaTestDouble open(String what) {
        String reason = CudaTestDouble.nvjpegUnavailableReason(GpuCheckCommandTest.DOUBLE_DIR);
        if (reason != null) {
            System.err.println("[stoke] SKIPPING " + what + " tests: " + reason);
        }
        assumeTrue(reason == null, reason);
        CudaTestDouble dbl = CudaTestDouble.open(GpuCheckCommandTest.DOUBLE_DIR);
        dbl.reset();
        System.setProperty(CudaDriver.PATH_PROPERTY, dbl.library().toString());
        System.setProperty(NvjpegLibrary.PATH_PROPERTY, dbl.library().toString());
        return dbl;
    }

    /** Points this JVM's commands back at the real driver and libnvjpeg. */
    static void clear() {
        System.clearProperty(CudaDriver.PATH_PROPERTY);
        System.clearProperty(NvjpegLibrary.PATH_PROPERTY);
    }
}
