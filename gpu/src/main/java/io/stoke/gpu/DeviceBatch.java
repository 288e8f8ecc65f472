package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.loader.BatchStats;
import io.stoke.loader.BatchView;
import io.stoke.loader.SlotLease;
import io.stoke.loader.error.SampleError;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * One batch in device memory, from {@link DeviceStage#next()} or {@link GpuDecodeStage#next()}. The data is there once
 * {@link #readyEvent()} completes: make your stream wait for it ({@link #waitOn}) or
 * {@link #synchronize()}. The host slot it came from has already gone back to the workers (or will
 * as soon as the copy completes); labels and indices were copied out of it first.
 *
 * <p>Closing returns the device buffer to the stage's pool. Close only when no work that reads the
 * buffer is still queued, or use {@link #closeAfter} to let the stage wait for that work on the
 * device. After closing (or after the stage closes), every accessor throws
 * {@link IllegalStateException}; segments from {@link #labels()} and {@link #indices()} too.
 */
public final class DeviceBatch implements BatchView {
    private final DeviceBatchOwner stage;
    private final DeviceEntry entry;
    private final SlotLease lease;
    private final MemorySegment labels;
    private final MemorySegment indices;
    private final int size;
    private final long sequence;
    private final long epoch;
    private final long batchIndex;
    private final boolean lastInEpoch;
    private final List<SampleError> skipped;
    private final BatchStats stats;

    DeviceBatch(DeviceBatchOwner stage, DeviceEntry entry) {
        this.stage = stage;
        this.entry = entry;
        this.size = entry.size;
        this.sequence = entry.sequence;
        this.epoch = entry.epoch;
        this.batchIndex = entry.batchIndex;
        this.lastInEpoch = entry.lastInEpoch;
        this.skipped = entry.skipped;
        this.stats = entry.stats;
        this.lease = new SlotLease(entry.index, index -> stage.returned(entry));
        this.labels = lease.view(entry.labels.asSlice(0, 4L * size));
        this.indices = lease.view(entry.indices.asSlice(0, 8L * size));
    }

    /** The {@code CUdeviceptr} of the first element: {@link #shape()} in C order, {@link #dtype()}. */
    public synchronized long pointer() {
        checkOpen();
        return entry.out.pointer();
    }

    /** Bytes of valid data at {@link #pointer()}. */
    public synchronized long byteSize() {
        checkOpen();
        return size * stage.sampleBytes();
    }

    /** {@code [n, H, W, 3]} for uint8, {@code [n, 3, H, W]} for float32 (normalised on the device). */
    public synchronized long[] shape() {
        checkOpen();
        return stage.shape(size);
    }

    /** {@link io.stoke.ring.RingLayout#DTYPE_UINT8} or {@link io.stoke.ring.RingLayout#DTYPE_FLOAT32}. */
    public int dtype() {
        return stage.dtype();
    }

    /** Number of samples. */
    public synchronized int size() {
        checkOpen();
        return size;
    }

    /** Labels, int32 {@code [n]}, in host memory. */
    public synchronized MemorySegment labels() {
        checkOpen();
        return labels;
    }

    public synchronized int label(int i) {
        checkOpen();
        return labels.getAtIndex(JAVA_INT, i);
    }

    /** Dataset indices, int64 {@code [n]}, in host memory. */
    public synchronized MemorySegment indices() {
        checkOpen();
        return indices;
    }

    public synchronized long index(int i) {
        checkOpen();
        return indices.getAtIndex(JAVA_LONG, i);
    }

    /**
     * Whether sample {@code i}'s pixels were decoded by nvJPEG ({@link GpuDecodeStage}); false where
     * the CPU decoded them (always, for {@link DeviceStage}'s batches).
     */
    public synchronized boolean decodedOnGpu(int i) {
        checkOpen();
        Objects.checkIndex(i, size);
        return entry.gpuDecoded != null && entry.gpuDecoded[i];
    }

    /** Samples that produced no pixels (zeroed) and why. */
    public List<SampleError> skipped() {
        return skipped;
    }

    /** The host batch's: the workers' time and bytes behind it. */
    @Override
    public BatchStats stats() {
        return stats;
    }

    /** {@link #synchronize()}: the batch is whole on the device. */
    @Override
    public void awaitReady() {
        synchronize();
    }

    public long sequence() {
        return sequence;
    }

    public long epoch() {
        return epoch;
    }

    public long batchIndex() {
        return batchIndex;
    }

    public boolean lastInEpoch() {
        return lastInEpoch;
    }

    /** The stage's stream, on which the copy or decode (and normalisation) of this batch is queued. */
    public CudaStream stream() {
        return stage.stream();
    }

    /** Completes when the batch is fully on the device (copied, and normalised if asked). */
    public synchronized CudaEvent readyEvent() {
        checkOpen();
        return entry.done;
    }

    /** The event after the host-to-device copy only: when it completes the host slot is returned. */
    CudaEvent copiedEvent() {
        return entry.copied;
    }

    /** Whether the data is on the device; never blocks. */
    public synchronized boolean isReady() {
        checkOpen();
        stage.ensureCurrent();
        return entry.done.isComplete();
    }

    /** Blocks the calling thread until the data is on the device. */
    public synchronized void synchronize() {
        checkOpen();
        stage.ensureCurrent();
        entry.done.synchronize();
    }

    /** Makes later work on {@code consumer} wait for this batch, without blocking the host. */
    public synchronized void waitOn(CudaStream consumer) {
        waitOn(consumer.handle());
    }

    /**
     * As {@link #waitOn(CudaStream)}, for a stream owned by someone else, given as its raw
     * {@code CUstream} (e.g. PyTorch's {@code torch.cuda.current_stream().cuda_stream}); must belong to
     * the same device's primary context.
     */
    public synchronized void waitOn(MemorySegment cuStream) {
        checkOpen();
        stage.ensureCurrent();
        CudaDriver d = stage.driver();
        d.check(d.cuStreamWaitEvent(cuStream, entry.done.handle(), 0), "cuStreamWaitEvent");
    }

    /**
     * Copies the batch's device data into {@code dst} after waiting for it, and returns when it is
     * there: for a model that runs on the host (into {@link GpuDecodeStage#pinnedHostBuffer}, which
     * the copy fills at the bus's full rate), and for checks. A training loop on the device reads the
     * batch where it is ({@link #pointer}, {@link #waitOn}).
     */
    public synchronized void copyToHost(MemorySegment dst) {
        checkOpen();
        long n = size * stage.sampleBytes();
        if (dst.byteSize() < n) {
            throw new IndexOutOfBoundsException("destination holds " + dst.byteSize() + " bytes, batch has " + n);
        }
        stage.ensureCurrent();
        entry.done.synchronize();
        entry.out.copyToHost(dst.asSlice(0, n), 0);
    }

    /**
     * Copies the batch's device data to the start of {@code dst}, another device buffer on the
     * stage's device, and returns when it is there: for a consumer in another process, which opens
     * {@code dst} by CUDA IPC and must not see it before the copy is done. The copy is queued on the
     * stage's stream after the batch's own work; {@code copied} (the caller's) is recorded after it
     * and waited for, so that the stage's later work on the stream is not waited for too.
     */
    public synchronized void copyToDevice(DeviceBuffer dst, CudaEvent copied) {
        checkOpen();
        long n = size * stage.sampleBytes();
        if (dst.byteSize() < n) {
            throw new IndexOutOfBoundsException("destination holds " + dst.byteSize() + " bytes, batch has " + n);
        }
        stage.ensureCurrent();
        CudaStream stream = stage.stream();
        waitOn(stream);
        dst.copyFromDeviceAsync(0, entry.out, n, stream);
        copied.record(stream);
        copied.synchronize();
    }

    /**
     * Returns the device buffer once the work queued on {@code consumer} so far is done: records an
     * event there, and the stage's next copy into this buffer waits for it on the device.
     */
    public void closeAfter(CudaStream consumer) {
        closeAfter(consumer.handle());
    }

    /** As {@link #closeAfter(CudaStream)}, for a raw {@code CUstream}. */
    public synchronized void closeAfter(MemorySegment cuStream) {
        if (lease.isClosed()) {
            return;
        }
        stage.ensureCurrent();
        CudaDriver d = stage.driver();
        d.check(d.cuEventRecord(entry.released.handle(), cuStream), "cuEventRecord");
        entry.waitForRelease = true;
        close();
    }

    public boolean isClosed() {
        return lease.isClosed();
    }

    private void checkOpen() {
        if (lease.isClosed()) {
            throw new IllegalStateException("device batch " + sequence + " is closed");
        }
    }

    /** Returns the device buffer to the stage's pool; the caller's work reading it must be done. Idempotent. */
    @Override
    public synchronized void close() {
        lease.giveBack();
    }

    /** The stage is closing: invalidate without returning anything. */
    synchronized void invalidate() {
        lease.abandon();
    }
}
