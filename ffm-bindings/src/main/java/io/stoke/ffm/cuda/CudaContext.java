package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A retained primary context of one device (the context the CUDA runtime, and so PyTorch, uses
 * too: memory and events are shared with them). Every thread that makes driver calls must
 * {@link #makeCurrent()} first. Closing releases the retain; idempotent.
 */
public final class CudaContext implements AutoCloseable {
    private final CudaDriver driver;
    private final CudaDevice device;
    private final MemorySegment handle;
    private volatile boolean closed;

    private CudaContext(CudaDriver driver, CudaDevice device, MemorySegment handle) {
        this.driver = driver;
        this.device = device;
        this.handle = handle;
    }

    /** {@code cuInit}, then retains device {@code ordinal}'s primary context and makes it current here. */
    public static CudaContext retainPrimary(CudaDriver driver, int ordinal) {
        driver.init();
        int count = driver.deviceCount();
        if (ordinal < 0 || ordinal >= count) {
            throw new IllegalArgumentException("no CUDA device " + ordinal + ": this machine has " + count);
        }
        CudaDevice device = driver.device(ordinal);
        MemorySegment ctx;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            driver.check(driver.cuDevicePrimaryCtxRetain(out, device.handle()), "cuDevicePrimaryCtxRetain");
            ctx = out.get(ADDRESS, 0);
        }
        CudaContext context = new CudaContext(driver, device, ctx);
        try {
            context.makeCurrent();
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
        return context;
    }

    /** Binds this context to the calling thread ({@code cuCtxSetCurrent}). */
    public void makeCurrent() {
        checkOpen();
        driver.check(driver.cuCtxSetCurrent(handle), "cuCtxSetCurrent");
    }

    /** Waits for all work in the context ({@code cuCtxSynchronize}). */
    public void synchronize() {
        checkOpen();
        driver.check(driver.cuCtxSynchronize(), "cuCtxSynchronize");
    }

    public CudaDriver driver() {
        return driver;
    }

    public CudaDevice device() {
        return device;
    }

    /** The {@code CUcontext}. */
    public MemorySegment handle() {
        return handle;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("CUDA context is released");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        driver.check(driver.cuDevicePrimaryCtxRelease_v2(device.handle()), "cuDevicePrimaryCtxRelease_v2");
    }
}
