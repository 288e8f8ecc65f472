package io.stoke.gpu;

import io.stoke.ffm.NativeLibraryMissingException;
import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaException;

/** How a stage opens its device: the driver, then the device's primary context, "no device" said in one sentence. */
final class DeviceOpening {
    private DeviceOpening() {}

    /**
     * The driver at {@link CudaDriver#defaultLibrary()}.
     *
     * @throws DeviceUnavailableException when it is not there
     */
    static CudaDriver driver() {
        String library = CudaDriver.defaultLibrary();
        try {
            return CudaDriver.load(library);
        } catch (NativeLibraryMissingException e) {
            throw new DeviceUnavailableException(CudaDriver.missingReason(library), e);
        }
    }

    /**
     * Device {@code device}'s primary context (the one the CUDA runtime and PyTorch use), retained.
     *
     * @throws DeviceUnavailableException when the driver finds no usable device, or no such one
     */
    static CudaContext primaryContext(CudaDriver driver, int device) {
        try {
            return CudaContext.retainPrimary(driver, device);
        } catch (CudaException e) {
            if (e.result() == CudaDriver.CUDA_ERROR_NO_DEVICE || e.result() == CudaDriver.CUDA_ERROR_STUB_LIBRARY) {
                throw new DeviceUnavailableException(
                        "a CUDA driver is installed but found no usable device (" + e.errorName() + ")", e);
            }
            throw e;
        } catch (IllegalArgumentException e) {
            throw new DeviceUnavailableException(e.getMessage(), e);
        }
    }
}
