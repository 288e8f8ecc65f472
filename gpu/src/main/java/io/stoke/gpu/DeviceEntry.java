package io.stoke.gpu;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.cuda.HostRegistration;
import io.stoke.loader.Batch;
import io.stoke.loader.BatchStats;
import io.stoke.loader.error.SampleError;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One device buffer of a stage's pool ({@link DeviceStage}, {@link GpuDecodeStage}), with the events
 * and host-side copies that go with it, and the batch it holds while handed out as a {@link DeviceBatch}.
 */
final class DeviceEntry {
    final int index;
    final DeviceBuffer staging; // uint8 copy target when normalising, else null
    final DeviceBuffer out; // what the consumer reads
    final CudaEvent copied; // the host-to-device copy is done: the host slot may go
    final CudaEvent done; // the batch is complete on the device (== copied without normalising)
    final CudaEvent released; // recorded by DeviceBatch.closeAfter on the consumer's stream
    final MemorySegment labels;
    final MemorySegment indices;
    final AtomicInteger owners = new AtomicInteger();
    volatile boolean waitForRelease;
    volatile DeviceBatch handedOut;
    Batch host;
    int size;
    long sequence;
    long epoch;
    long batchIndex;
    boolean lastInEpoch;
    List<SampleError> skipped;
    BatchStats stats;
    /** GpuDecodeStage only: which positions nvJPEG decoded (the others the CPU); null for DeviceStage. */
    boolean[] gpuDecoded;

    /** GpuDecodeStage only: host pixels of the images the CPU decoded, copied from on the stage's stream. */
    private Arena hostArena;

    private MemorySegment hostPixels;
    private HostRegistration hostPinned;
    /** Whether copies from {@link #hostPixels} were queued: its next writer waits for {@link #done} first. */
    boolean hostUsed;

    DeviceEntry(
            int index,
            DeviceBuffer staging,
            DeviceBuffer out,
            CudaEvent copied,
            CudaEvent done,
            CudaEvent released,
            MemorySegment labels,
            MemorySegment indices) {
        this.index = index;
        this.staging = staging;
        this.out = out;
        this.copied = copied;
        this.done = done;
        this.released = released;
        this.labels = labels;
        this.indices = indices;
    }

    /**
     * The entry's host pixels, {@code bytes} long, allocated and pinned on first use (most batches
     * need none): pinned, so that a copy from them is DMA queued on the stream, not a copy that
     * first waits for everything queued before it, as one from pageable memory does.
     */
    MemorySegment hostPixels(CudaDriver driver, long bytes) {
        if (hostPixels == null) {
            hostArena = Arena.ofShared();
            hostPixels = hostArena.allocate(bytes, 64);
            hostPinned = HostRegistration.register(driver, hostPixels);
        }
        return hostPixels;
    }

    /** Unpins and frees the host pixels; nothing queued may still copy from them. */
    void closeHost() {
        if (hostArena != null) {
            hostPinned.close();
            hostArena.close();
            hostArena = null;
            hostPixels = null;
            hostPinned = null;
        }
    }
}
