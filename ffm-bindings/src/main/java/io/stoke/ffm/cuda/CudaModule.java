package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A module loaded from PTX text ({@code cuModuleLoadData}); the driver JIT-compiles it for the
 * device, so PTX for an older virtual architecture runs on newer GPUs. Closing unloads it, after
 * which its functions must not be launched; idempotent.
 */
public final class CudaModule implements AutoCloseable {
    private final CudaDriver driver;
    private final MemorySegment handle;
    private volatile boolean closed;

    private CudaModule(CudaDriver driver, MemorySegment handle) {
        this.driver = driver;
        this.handle = handle;
    }

    /** Loads {@code ptx} (the text of a {@code .ptx} file) into the current context. */
    public static CudaModule loadPtx(CudaDriver driver, String ptx) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment image = a.allocateFrom(ptx); // NUL-terminated, as the driver requires for PTX
            MemorySegment out = a.allocate(ADDRESS);
            driver.check(driver.cuModuleLoadData(out, image), "cuModuleLoadData");
            return new CudaModule(driver, out.get(ADDRESS, 0));
        }
    }

    /** The {@code CUfunction} of kernel {@code name} ({@code extern "C"}, so unmangled). */
    public MemorySegment function(String name) {
        checkOpen();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            driver.check(
                    driver.cuModuleGetFunction(out, handle, a.allocateFrom(name)), "cuModuleGetFunction(" + name + ")");
            return out.get(ADDRESS, 0);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("CUDA module is unloaded");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        driver.check(driver.cuModuleUnload(handle), "cuModuleUnload");
    }
}
