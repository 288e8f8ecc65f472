package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory from {@code cuMemHostAlloc}. Its segment belongs to an arena owned by
 * this object: closing frees the memory ({@code cuMemFreeHost}) and any later access through the
 * segment throws instead of touching freed memory.
 */
public final class PinnedHostMemory implements AutoCloseable {
    private final Arena arena;
    private final MemorySegment segment;

    private PinnedHostMemory(Arena arena, MemorySegment segment) {
        this.arena = arena;
        this.segment = segment;
    }

    /** Allocates {@code bytes} of pinned, portable host memory. */
    public static PinnedHostMemory allocate(CudaDriver driver, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("pinned allocation of " + bytes + " bytes");
        }
        MemorySegment raw;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            driver.check(driver.cuMemHostAlloc(out, bytes, CudaDriver.CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
            raw = out.get(ADDRESS, 0);
        }
        Arena arena = Arena.ofShared();
        long address = raw.address();
        // The arena's cleanup frees the memory, after every access through the segment has become impossible.
        MemorySegment segment =
                raw.reinterpret(bytes, arena, s -> driver.cuMemFreeHost(MemorySegment.ofAddress(address)));
        return new PinnedHostMemory(arena, segment);
    }

    public MemorySegment segment() {
        return segment;
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
