package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.loader.Loader;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the GPU decode stage's tests share: the CUDA and nvJPEG doubles, opened for each test, and
 * what each test must leave behind (device memory freed, nvJPEG's handles, states and streams
 * closed, no state in two calls at once, no host buffer changed under a queued copy); a dataset
 * folder; the stage's builder on the doubles.
 */
abstract class StageOnDoubles {
    @TempDir
    Path root;

    CudaTestDouble dbl;
    long deviceAllocsBefore;

    @BeforeEach
    void open() {
        dbl = NvjpegDoubles.open("GPU decode stage");
        dbl.verifyCopies(true);
        deviceAllocsBefore = dbl.stat("live_device_allocs");
    }

    @AfterEach
    void close() {
        if (dbl == null) {
            return;
        }
        try {
            assertEquals(deviceAllocsBefore, dbl.stat("live_device_allocs"), "device memory freed");
            NvjpegDoubles.assertNoneLive(dbl); // the readers' examiners' streams too
            assertEquals(0, dbl.nvjpegStat("state_overlaps"), "no nvJPEG state in two calls at once");
            assertEquals(0, dbl.stat("checksum_mismatches"), "no host buffer changed under a queued copy");
        } finally {
            dbl.reset();
        }
    }

    /** The stage over {@code settings}, on the doubles. */
    GpuDecodeStage.Builder stage(Loader.Builder settings) {
        return GpuDecodeStage.builder(settings).driver(dbl.driver()).nvjpeg(dbl.nvjpeg());
    }
}
