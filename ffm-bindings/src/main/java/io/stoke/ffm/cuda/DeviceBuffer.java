package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Device memory from {@code cuMemAlloc_v2}. Every copy is bounds-checked here against both the
 * device allocation and the host segment before the driver sees it. Closing frees it; idempotent.
 * Freeing while a copy into it is still queued is the caller's error, as in CUDA.
 */
public final class DeviceBuffer implements AutoCloseable {
    private final CudaDriver driver;
    private final long pointer;
    private final long size;
    private volatile boolean closed;

    private DeviceBuffer(CudaDriver driver, long pointer, long size) {
        this.driver = driver;
        this.pointer = pointer;
        this.size = size;
    }

    /** Allocates {@code bytes} of device memory in the current context. */
    public static DeviceBuffer allocate(CudaDriver driver, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("device allocation of " + bytes + " bytes");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            driver.check(driver.cuMemAlloc_v2(out, bytes), "cuMemAlloc_v2");
            return new DeviceBuffer(driver, out.get(JAVA_LONG, 0), bytes);
        }
    }

    /** The {@code CUdeviceptr}. */
    public long pointer() {
        checkOpen();
        return pointer;
    }

    public long byteSize() {
        return size;
    }

    /** Queues a copy of all of {@code src} to {@code offset} on {@code stream}; {@code src} must stay put until it completes. */
    public void copyFromHostAsync(long offset, MemorySegment src, CudaStream stream) {
        checkRange(offset, src.byteSize());
        driver.check(
                driver.cuMemcpyHtoDAsync_v2(pointer + offset, src, src.byteSize(), stream.handle()),
                "cuMemcpyHtoDAsync_v2");
    }

    /**
     * Queues a copy of the first {@code bytes} of {@code src} to {@code offset} on {@code stream}, as
     * {@link #copyFromHostAsync(long, MemorySegment, CudaStream)} does with no slice of {@code src}
     * made (a batch's jobs, every batch, allocate nothing).
     */
    public void copyFromHostAsync(long offset, MemorySegment src, long bytes, CudaStream stream) {
        if (bytes < 0 || bytes > src.byteSize()) {
            throw new IndexOutOfBoundsException(bytes + " bytes from a host segment of " + src.byteSize());
        }
        checkRange(offset, bytes);
        driver.check(
                driver.cuMemcpyHtoDAsync_v2(pointer + offset, src, bytes, stream.handle()), "cuMemcpyHtoDAsync_v2");
    }

    /** Copies all of {@code src} to {@code offset}, returning when done. */
    public void copyFromHost(long offset, MemorySegment src) {
        checkRange(offset, src.byteSize());
        driver.check(driver.cuMemcpyHtoD_v2(pointer + offset, src, src.byteSize()), "cuMemcpyHtoD_v2");
    }

    /** Fills all of {@code dst} from {@code offset}, returning when done. */
    public void copyToHost(MemorySegment dst, long offset) {
        checkRange(offset, dst.byteSize());
        driver.check(driver.cuMemcpyDtoH_v2(dst, pointer + offset, dst.byteSize()), "cuMemcpyDtoH_v2");
    }

    /**
     * Queues a copy of {@code bytes} from {@code src} (from its start) to {@code offset} on
     * {@code stream}; both ranges checked here.
     */
    public void copyFromDeviceAsync(long offset, DeviceBuffer src, long bytes, CudaStream stream) {
        checkRange(offset, bytes);
        src.checkRange(0, bytes);
        driver.check(
                driver.cuMemcpyDtoDAsync_v2(pointer + offset, src.pointer, bytes, stream.handle()),
                "cuMemcpyDtoDAsync_v2");
    }

    /**
     * This allocation's IPC handle ({@code cuIpcGetMemHandle}), {@value CudaDriver#IPC_HANDLE_SIZE}
     * bytes, for a process on the same device to open. The handle stays valid while this buffer is.
     */
    public byte[] ipcHandle() {
        checkOpen();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(CudaDriver.IPC_HANDLE_SIZE);
            driver.check(driver.cuIpcGetMemHandle(out, pointer), "cuIpcGetMemHandle");
            return out.toArray(JAVA_BYTE);
        }
    }

    private void checkRange(long offset, long bytes) {
        checkOpen();
        if (offset < 0 || bytes < 0 || offset > size - bytes) {
            throw new IndexOutOfBoundsException(
                    "bytes [" + offset + ", " + offset + " + " + bytes + ") outside a device buffer of " + size);
        }
    }

    public boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("device buffer is freed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        driver.check(driver.cuMemFree_v2(pointer), "cuMemFree_v2");
    }
}
