package io.stoke.gpu;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaStream;

/**
 * What a {@link DeviceBatch} asks of the stage that handed it out ({@link DeviceStage}, which copies
 * host batches, or {@link GpuDecodeStage}, which decodes on the device). Each stage implements it
 * in a private object, so none of it is on the stages' public face.
 */
interface DeviceBatchOwner {
    /** The consumer is done with the entry's device buffer. */
    void returned(DeviceEntry entry);

    /** Bytes per sample of the batches handed out. */
    long sampleBytes();

    /** {@code [n, H, W, 3]} uint8, or {@code [n, 3, H, W]} float32. */
    long[] shape(int n);

    int dtype();

    /** The stream the batches are made on. */
    CudaStream stream();

    CudaDriver driver();

    /** Binds the stage's context to the calling thread once; driver calls need it current. */
    void ensureCurrent();
}
