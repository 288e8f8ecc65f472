package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.loader.Batch;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The GPU stage on a machine without a CUDA driver: needs neither a GPU nor the test double. */
class DeviceStageNoDriverTest {
    static final int H = DeviceStageTest.H;
    static final int W = DeviceStageTest.W;

    @Test
    void withoutADriverTheStageSaysSoOrStepsAside() throws Exception {
        String old = System.getProperty(CudaDriver.PATH_PROPERTY);
        System.setProperty(CudaDriver.PATH_PROPERTY, "/nonexistent/libcuda.so.1");
        try (FakeSource src = new FakeSource(2, 2, H, W, 1, 2)) {
            DeviceUnavailableException e = assertThrows(
                    DeviceUnavailableException.class,
                    () -> DeviceStage.builder(src.ring, src).build());
            assertTrue(e.getMessage().startsWith("no CUDA driver found"), e.getMessage());
            List<String> said = new ArrayList<>();
            assertTrue(DeviceStage.openOrHost(DeviceStage.builder(src.ring, src), said::add)
                    .isEmpty());
            assertEquals(1, said.size());
            assertTrue(
                    said.get(0).contains("no CUDA driver found") && said.get(0).contains("host batches"), said.get(0));
            assertTrue(DeviceStage.unavailableReason().startsWith("no CUDA driver found"));
            // The host path is untouched: the batch is still there for the caller.
            try (Batch b = src.get()) {
                assertEquals(2, b.size());
            }
        } finally {
            if (old == null) {
                System.clearProperty(CudaDriver.PATH_PROPERTY);
            } else {
                System.setProperty(CudaDriver.PATH_PROPERTY, old);
            }
        }
    }
}
