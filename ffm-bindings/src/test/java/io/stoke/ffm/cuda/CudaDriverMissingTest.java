package io.stoke.ffm.cuda;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.NativeLibraryMissingException;
import org.junit.jupiter.api.Test;

/** Without any driver library: needs neither a GPU nor the test double, so it always runs. */
class CudaDriverMissingTest {
    @Test
    void missingDriverIsOneReadableSentence() {
        NativeLibraryMissingException e =
                assertThrows(NativeLibraryMissingException.class, () -> CudaDriver.load("/nonexistent/libcuda.so.1"));
        assertTrue(e.getMessage().contains("/nonexistent/libcuda.so.1"), e.getMessage());
        assertTrue(e.getMessage().contains("NVIDIA driver"), e.getMessage());

        String old = System.getProperty(CudaDriver.PATH_PROPERTY);
        System.setProperty(CudaDriver.PATH_PROPERTY, "/nonexistent/libcuda.so.1");
        try {
            CudaDriver.Availability a = CudaDriver.tryLoad();
            assertTrue(a.driver().isEmpty());
            assertTrue(a.reason().startsWith("no CUDA driver found"), a.reason());
        } finally {
            if (old == null) {
                System.clearProperty(CudaDriver.PATH_PROPERTY);
            } else {
                System.setProperty(CudaDriver.PATH_PROPERTY, old);
            }
        }
    }
}
