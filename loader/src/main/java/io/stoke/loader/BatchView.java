package io.stoke.loader;

import io.stoke.loader.error.SampleError;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * What a consumer sees of a batch, wherever its pixels are: a {@link Batch} in a ring slot, or
 * the GPU stage's batch in device memory. Labels and indices are in host memory either way. A
 * loop that only counts, labels or times batches is written once against this face.
 */
public interface BatchView extends AutoCloseable {
    /** Number of samples (the batch size, or fewer for an epoch's last batch). */
    int size();

    /** {@code [n, H, W, 3]} for uint8 output, {@code [n, 3, H, W]} for float32. */
    long[] shape();

    /** {@link io.stoke.ring.RingLayout#DTYPE_UINT8} or {@link io.stoke.ring.RingLayout#DTYPE_FLOAT32}. */
    int dtype();

    /** Labels as int32 {@code [n]}, in host memory. */
    MemorySegment labels();

    int label(int i);

    /** Dataset indices as int64 {@code [n]}, in host memory: which sample sits at each position. */
    MemorySegment indices();

    long index(int i);

    /** Samples that produced no pixels (zeroed) and why. Empty for a clean batch. */
    List<SampleError> skipped();

    /** The workers' time and the bytes behind this batch. */
    BatchStats stats();

    long sequence();

    long epoch();

    long batchIndex();

    boolean lastInEpoch();

    /**
     * Returns once the pixels may be read by the consumer's own work: at once for a host batch,
     * after the device's copy (and normalisation) for a device batch, as a training step would
     * wait before using it.
     */
    default void awaitReady() {}

    /** Gives the batch's memory back to the loader. */
    @Override
    void close();
}
