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
    /**
     * Where {@link #forDecodedRows} starts its segment past a 64-byte boundary: 8-byte aligned (for
     * Java's aligned accesses) but never 32-byte aligned, so that neither is a row of a width that
     * is a multiple of 8 pixels.
     */
    static final long DECODED_ROWS_SKEW = 8;

    private final long skew;
    private Arena arena = Arena.ofConfined();
    private MemorySegment segment;

    /** @param initialBytes bytes allocated now (0: nothing until the first {@link #ensure}) */
    public ScratchImage(long initialBytes) {
        this(initialBytes, 0);
    }

    private ScratchImage(long initialBytes, long skew) {
        this.skew = skew;
        segment = initialBytes > 0 ? allocate(arena, initialBytes) : MemorySegment.NULL;
    }

    /**
     * Scratch for the RGBX rows libjpeg-turbo decodes into: its AVX2 colour conversion writes a row
     * that starts on a 32-byte boundary with non-temporal stores ({@code vmovntdq}), which bypass
     * the caches, so that the resize then read the whole image back from memory. This segment starts
     * {@link #DECODED_ROWS_SKEW} bytes past a boundary, so the rows are written with ordinary stores
     * and are still in the cache when the resize reads them. On 0.2 MP photographs' training crops,
     * one thread, the horizontal pass after a hit's decode took 74.2 against 99.5 us an image, and
     * the decode itself 299.7 against 309.7 (benchmarks/native/decode_then_resize.c,
     * docs/benchmarks/pixels.md). JpegDecoder's scratch; libspng and libwebp have no such stores.
     */
    public static ScratchImage forDecodedRows(long initialBytes) {
        return new ScratchImage(initialBytes, DECODED_ROWS_SKEW);
    }

    private MemorySegment allocate(Arena in, long bytes) {
        return in.allocate(bytes + skew, 64).asSlice(skew, bytes);
    }

    /** The segment, at least {@code bytes} long; a new one (the old one freed) when it had to grow. */
    public MemorySegment ensure(long bytes) {
        if (segment.byteSize() < bytes) {
            Arena next = Arena.ofConfined();
            MemorySegment bigger = allocate(next, Math.max(bytes, segment.byteSize() * 3 / 2));
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
