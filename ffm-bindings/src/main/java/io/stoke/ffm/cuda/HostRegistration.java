package io.stoke.ffm.cuda;

import java.lang.foreign.MemorySegment;

/**
 * Existing host memory page-locked and registered with the driver ({@code cuMemHostRegister_v2}),
 * so that asynchronous copies from it are true DMA and overlap with compute. Works for memory this
 * process allocated and for {@code /dev/shm} mappings alike. Registering is slow (it pins every
 * page): do it once, not per batch.
 *
 * <p>Close before the memory itself is freed or unmapped. Closing unregisters; idempotent.
 */
public final class HostRegistration implements AutoCloseable {
    private final CudaDriver driver;
    private final MemorySegment memory;
    private final long address;
    private volatile boolean closed;

    private HostRegistration(CudaDriver driver, MemorySegment memory) {
        this.driver = driver;
        this.memory = memory;
        this.address = memory.address();
    }

    /** Pins all of {@code memory} with {@link CudaDriver#CU_MEMHOSTREGISTER_PORTABLE} (visible to every context). */
    public static HostRegistration register(CudaDriver driver, MemorySegment memory) {
        if (memory.byteSize() == 0) {
            throw new IllegalArgumentException("nothing to register");
        }
        driver.check(
                driver.cuMemHostRegister_v2(memory, memory.byteSize(), CudaDriver.CU_MEMHOSTREGISTER_PORTABLE),
                "cuMemHostRegister_v2");
        return new HostRegistration(driver, memory);
    }

    /** The registered memory. */
    public MemorySegment memory() {
        return memory;
    }

    /** Whether {@code segment} lies entirely inside the registered range. */
    public boolean covers(MemorySegment segment) {
        long start = segment.address();
        return !closed && start >= address && start + segment.byteSize() <= address + memory.byteSize();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        // By address: if the owner already freed the memory, the pages must still be unpinned, and a
        // closed segment cannot be passed to a downcall.
        driver.check(driver.cuMemHostUnregister(MemorySegment.ofAddress(address)), "cuMemHostUnregister");
    }
}
