package io.stoke.gpu;

import io.stoke.ffm.cuda.CudaDriver;

/**
 * What the builders of both GPU stages set alike ({@link DeviceStage.Builder},
 * {@link GpuDecodeStage.Builder}): the device, its driver and the device buffers in flight. Each
 * setter returns the builder it is called on; the stage reads the fields once, when it opens.
 *
 * @param <B> the builder
 */
public abstract class DeviceOptions<B extends DeviceOptions<B>> {
    CudaDriver driver; // null: DeviceOpening.driver()
    int device;
    int inFlight = 3;

    DeviceOptions() {} // this package's builders only

    /** This builder, as its own type. */
    abstract B self();

    /** Device ordinal (default 0). */
    public B device(int device) {
        this.device = device;
        return self();
    }

    /** K, device buffers in the pool = batches on the device at most (default 3; at least 1). */
    public B inFlight(int k) {
        if (k < 1 || k > 64) {
            throw new IllegalArgumentException("inFlight must be in [1, 64]: " + k);
        }
        this.inFlight = k;
        return self();
    }

    /** The driver to use (default: {@link CudaDriver#load()}, i.e. libcuda.so.1 or -Dstoke.cuda.path). */
    public B driver(CudaDriver driver) {
        this.driver = driver;
        return self();
    }
}
