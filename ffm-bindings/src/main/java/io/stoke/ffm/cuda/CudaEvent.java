package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A {@code CUevent} in the current context. Closing destroys it; idempotent. */
public final class CudaEvent implements AutoCloseable {
    private final CudaDriver driver;
    private final MemorySegment handle;
    private volatile boolean closed;

    private CudaEvent(CudaDriver driver, MemorySegment handle) {
        this.driver = driver;
        this.handle = handle;
    }

    /** An event without timing ({@code CU_EVENT_DISABLE_TIMING}): the cheapest to record and query. */
    public static CudaEvent create(CudaDriver driver) {
        return create(driver, CudaDriver.CU_EVENT_DISABLE_TIMING);
    }

    /** An event that can be used with {@link #elapsedMillis}. */
    public static CudaEvent createTimed(CudaDriver driver) {
        return create(driver, CudaDriver.CU_EVENT_DEFAULT);
    }

    public static CudaEvent create(CudaDriver driver, int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            driver.check(driver.cuEventCreate(out, flags), "cuEventCreate");
            return new CudaEvent(driver, out.get(ADDRESS, 0));
        }
    }

    /** The {@code CUevent}. */
    public MemorySegment handle() {
        if (closed) {
            throw new IllegalStateException("CUDA event is destroyed");
        }
        return handle;
    }

    /** Captures the work queued on {@code stream} so far: the event completes when that work has. */
    public void record(CudaStream stream) {
        driver.check(driver.cuEventRecord(handle(), stream.handle()), "cuEventRecord");
    }

    /** Whether the recorded work is done; never blocks. */
    public boolean isComplete() {
        int r = driver.cuEventQuery(handle());
        if (r == CudaDriver.CUDA_ERROR_NOT_READY) {
            return false;
        }
        driver.check(r, "cuEventQuery");
        return true;
    }

    /** Blocks until the recorded work is done. */
    public void synchronize() {
        driver.check(driver.cuEventSynchronize(handle()), "cuEventSynchronize");
    }

    /** Milliseconds between {@code start} and this event, both recorded, complete and timed. */
    public float elapsedMillis(CudaEvent start) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_FLOAT);
            driver.check(driver.cuEventElapsedTime_v2(out, start.handle(), handle()), "cuEventElapsedTime_v2");
            return out.get(JAVA_FLOAT, 0);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        driver.check(driver.cuEventDestroy_v2(handle), "cuEventDestroy_v2");
    }
}
