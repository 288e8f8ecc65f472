package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One TurboJPEG compression handle, owned by one thread. Stoke compresses only to make datasets
 * and test data; the output buffer is the caller's, sized with {@link TurboJpeg#tjBufSize}, and
 * the library is told never to reallocate it.
 */
public final class JpegCompressor implements AutoCloseable {
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment bufPtr = arena.allocate(ADDRESS);
    private final MemorySegment sizePtr = arena.allocate(JAVA_LONG);
    private MemorySegment handle;
    /** Whether this handle has made a progressive JPEG (see {@link #compress}). */
    private boolean progressiveUsed;

    public JpegCompressor() {
        TurboJpeg.ensureLoaded();
        handle = TurboJpeg.tjInitCompress();
        if (handle.equals(MemorySegment.NULL)) {
            arena.close();
            throw new IllegalStateException("tjInitCompress failed");
        }
    }

    /** The worst-case compressed size of an image, for sizing {@code dst}. */
    public static long maxSize(int width, int height, int subsamp) {
        return TurboJpeg.tjBufSize(width, height, subsamp);
    }

    /**
     * Compresses {@code src} into {@code dst}.
     *
     * @return the JPEG's length in bytes
     * @throws IllegalStateException with the library's message when compression fails
     */
    public long compress(
            MemorySegment src,
            int width,
            int pitch,
            int height,
            int pixelFormat,
            int subsamp,
            int quality,
            int flags,
            MemorySegment dst) {
        if (handle == null) {
            throw new IllegalStateException("compressor is closed");
        }
        if ((long) pitch * height > src.byteSize() || pitch < width * TurboJpeg.pixelSize(pixelFormat)) {
            throw new IndexOutOfBoundsException("source too small for " + width + "x" + height);
        }
        long max = maxSize(width, height, subsamp);
        if (dst.byteSize() < max) {
            throw new IndexOutOfBoundsException("destination holds " + dst.byteSize() + " bytes, need " + max);
        }
        boolean progressive = (flags & TurboJpeg.TJFLAG_PROGRESSIVE) != 0;
        if (progressiveUsed && !progressive) {
            // libjpeg-turbo 2.1 keeps the progressive scan script on the handle, and the next
            // baseline image comes out corrupt (it decodes, as stripes). A fresh handle has none.
            TurboJpeg.tjDestroy(handle);
            handle = TurboJpeg.tjInitCompress();
            progressiveUsed = false;
            if (handle.equals(MemorySegment.NULL)) {
                handle = null;
                arena.close();
                throw new IllegalStateException("tjInitCompress failed");
            }
        }
        progressiveUsed |= progressive;
        bufPtr.set(ADDRESS, 0, dst);
        sizePtr.set(JAVA_LONG, 0, dst.byteSize());
        int rc = TurboJpeg.tjCompress2(
                handle,
                src,
                width,
                pitch,
                height,
                pixelFormat,
                bufPtr,
                sizePtr,
                subsamp,
                quality,
                flags | TurboJpeg.TJFLAG_NOREALLOC);
        if (rc != 0) {
            MemorySegment s = TurboJpeg.tjGetErrorStr2(handle);
            throw new IllegalStateException(
                    "tjCompress2: " + s.reinterpret(1024).getString(0));
        }
        return sizePtr.get(JAVA_LONG, 0);
    }

    @Override
    public void close() {
        if (handle != null) {
            TurboJpeg.tjDestroy(handle);
            handle = null;
            arena.close();
        }
    }
}
