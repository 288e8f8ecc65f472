package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A {@code CUstream} in the current context. Closing destroys it; idempotent. */
public final class CudaStream implements AutoCloseable {
    private final CudaDriver driver;
    private final MemorySegment handle;
    private volatile boolean closed;

    private CudaStream(CudaDriver driver, MemorySegment handle) {
        this.driver = driver;
        this.handle = handle;
    }

    /**
     * A stream with {@link CudaDriver#CU_STREAM_NON_BLOCKING}: it does not wait for the legacy
     * default stream, so other libraries' work on stream 0 cannot stall our copies.
     */
    public static CudaStream create(CudaDriver driver) {
        return create(driver, CudaDriver.CU_STREAM_NON_BLOCKING);
    }

    public static CudaStream create(CudaDriver driver, int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            driver.check(driver.cuStreamCreate(out, flags), "cuStreamCreate");
            return new CudaStream(driver, out.get(ADDRESS, 0));
        }
    }

    /** The {@code CUstream}. */
    public MemorySegment handle() {
        checkOpen();
        return handle;
    }

    /** Makes later work on this stream wait until {@code event} completes, without blocking the host. */
    public void waitFor(CudaEvent event) {
        driver.check(driver.cuStreamWaitEvent(handle(), event.handle(), 0), "cuStreamWaitEvent");
    }

    /** Blocks until all work queued on this stream is done. */
    public void synchronize() {
        driver.check(driver.cuStreamSynchronize(handle()), "cuStreamSynchronize");
    }

    public boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("CUDA stream is destroyed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        driver.check(driver.cuStreamDestroy_v2(handle), "cuStreamDestroy_v2");
    }
}
