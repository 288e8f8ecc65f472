package io.stoke.loader.decode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Native scratch memory one thread owns: a decoder's image, the restart cache's copies. One
 * segment, grown (by half again at least, so that a run of slightly larger images does not
 * reallocate for each) and never shrunk. A grown segment replaces the old one, whose arena is
 * closed; what it held is not kept.
 */
public final class ScratchImage implements AutoCloseable {
    private Arena arena = Arena.ofConfined();
    private MemorySegment segment;

    /** @param initialBytes bytes allocated now (0: nothing until the first {@link #ensure}) */
    public ScratchImage(long initialBytes) {
        segment = initialBytes > 0 ? arena.allocate(initialBytes, 64) : MemorySegment.NULL;
    }

    /** The segment, at least {@code bytes} long; a new one (the old one freed) when it had to grow. */
    public MemorySegment ensure(long bytes) {
        if (segment.byteSize() < bytes) {
            Arena next = Arena.ofConfined();
            MemorySegment bigger = next.allocate(Math.max(bytes, segment.byteSize() * 3 / 2), 64);
            arena.close();
            arena = next;
            segment = bigger;
        }
        return segment;
    }

    /** The segment as it is. */
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public void close() {
        arena.close();
    }
}
