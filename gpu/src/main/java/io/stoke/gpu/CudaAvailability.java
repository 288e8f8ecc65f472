package io.stoke.gpu;

import io.stoke.ffm.cuda.CudaDriver;
import java.util.Optional;

/**
 * Whether CUDA work can run on this machine, and if not why, in one sentence for the user: what a
 * command asks before it starts anything on a GPU, so that a machine without one gets that sentence
 * and not a failure half-way. {@link GpuCheck#open} and {@link DeviceStage} open the device itself.
 */
public final class CudaAvailability {
    private CudaAvailability() {}

    /**
     * Why no CUDA driver library loads here (where it was looked for, and how to install one), or
     * empty when one loads. Calls nothing in the driver: enough for a library that opens the device
     * itself (ONNX Runtime's CUDA execution provider).
     */
    public static Optional<String> driverMissing() {
        CudaDriver.Availability a = CudaDriver.tryLoad();
        return a.driver().isPresent() ? Optional.empty() : Optional.of(a.reason());
    }

    /**
     * Why no CUDA device can be used here, or empty when a driver with at least one device is
     * present. Loads the driver and calls {@code cuInit}; never throws.
     */
    public static Optional<String> deviceMissing() {
        CudaDriver.Availability a = CudaDriver.tryLoad();
        if (a.driver().isEmpty()) {
            return Optional.of(a.reason());
        }
        try {
            CudaDriver d = a.driver().get();
            d.init();
            return d.deviceCount() > 0
                    ? Optional.empty()
                    : Optional.of("a CUDA driver is installed but reports no device");
        } catch (RuntimeException e) {
            return Optional.of("the CUDA driver cannot be used: " + e.getMessage());
        }
    }
}
