package io.stoke.loader.cache;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Native memory one thread owns and grows (at least doubling, so it grows a few times in a run and
 * then never), each size in its own confined arena, the old one freed when it grows.
 */
final class GrowingBuffer implements AutoCloseable {
    private Arena arena = Arena.ofConfined();
    private MemorySegment memory;

    GrowingBuffer(long initial) {
        memory = arena.allocate(initial, 64);
    }

    /** The buffer, at least {@code n} bytes; what it held is not kept when it grows. */
    MemorySegment atLeast(long n) {
        if (memory.byteSize() < n) {
            Arena next = Arena.ofConfined();
            MemorySegment bigger = next.allocate(Math.max(n, 2 * memory.byteSize()), 64);
            arena.close();
            arena = next;
            memory = bigger;
        }
        return memory;
    }

    /** The buffer as it is. */
    MemorySegment memory() {
        return memory;
    }

    @Override
    public void close() {
        arena.close();
    }
}
