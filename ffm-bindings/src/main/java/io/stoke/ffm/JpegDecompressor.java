package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One TurboJPEG decompression handle and its out-parameters, owned by one thread.
 *
 * <p>{@link #readHeader} fills {@link #width()}, {@link #height()}, {@link #subsampling()} and
 * {@link #colorspace()} without allocating. {@link #decompress} refuses, in Java, any destination
 * that is smaller than {@code pitch * height}: the C library is never asked to write past a
 * segment's end.
 */
public final class JpegDecompressor implements AutoCloseable {
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment out = arena.allocate(JAVA_INT, 4);
    // Sliced once: a slice per call would be an allocation per image.
    private final MemorySegment widthOut = out.asSlice(0, 4);
    private final MemorySegment heightOut = out.asSlice(4, 4);
    private final MemorySegment subsampOut = out.asSlice(8, 4);
    private final MemorySegment colorspaceOut = out.asSlice(12, 4);
    /** {@link #errorMessage()} for a stream that ends before its frame header gives a size. */
    public static final String HEADER_CUT_SHORT =
            "Premature end of JPEG file: the data ends inside the header, before the image size";

    private MemorySegment handle;
    // The last failed call's message and code, kept in Java: the handle they came from is renewed.
    private String lastError = "no error";
    private int lastErrorCode = TurboJpeg.TJERR_WARNING;

    public JpegDecompressor() {
        TurboJpeg.ensureLoaded();
        handle = TurboJpeg.tjInitDecompress();
        if (handle.equals(MemorySegment.NULL)) {
            arena.close();
            throw new IllegalStateException("tjInitDecompress failed");
        }
    }

    /**
     * Keeps the failed call's message and code, then replaces the handle. libjpeg-turbo 2.1 leaves
     * a stream that failed inside its header half-read on the handle (it does not abort the
     * decompressor on that path), so the next image on the same handle would fail with this one's
     * error: one hostile file would spoil the good files after it on the same worker. Only failed
     * calls pay for the new handle.
     */
    private int failed(int rc) {
        MemorySegment s = TurboJpeg.tjGetErrorStr2(handle);
        lastError = s.equals(MemorySegment.NULL)
                ? "unknown error"
                : s.reinterpret(1024).getString(0);
        lastErrorCode = TurboJpeg.tjGetErrorCode(handle);
        MemorySegment fresh = TurboJpeg.tjInitDecompress();
        if (fresh.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("tjInitDecompress failed while renewing a handle after: " + lastError);
        }
        TurboJpeg.tjDestroy(handle);
        handle = fresh;
        return rc;
    }

    /**
     * Parses the header of {@code jpeg[0, size)}; returns 0, or -1 with {@link #errorMessage()} set.
     * A stream that ends inside its header, which libjpeg-turbo accepts without a size, is an error
     * here ({@link #HEADER_CUT_SHORT}); {@link #width()} and {@link #height()} never read the previous
     * image's size.
     */
    public int readHeader(MemorySegment jpeg, long size) {
        checkOpen();
        checkBounds(jpeg, size);
        // libjpeg-turbo leaves the out-parameters untouched for a header cut short.
        out.fill((byte) 0);
        int rc = TurboJpeg.tjDecompressHeader3(handle, jpeg, size, widthOut, heightOut, subsampOut, colorspaceOut);
        if (rc == 0 && (width() == 0 || height() == 0)) {
            failed(-1);
            lastError = HEADER_CUT_SHORT;
            lastErrorCode = TurboJpeg.TJERR_FATAL;
            return -1;
        }
        return rc == 0 ? 0 : failed(rc);
    }

    public int width() {
        return out.getAtIndex(JAVA_INT, 0);
    }

    public int height() {
        return out.getAtIndex(JAVA_INT, 1);
    }

    /** A {@code TJSAMP_*} value, or -1 when the library could not classify it. */
    public int subsampling() {
        return out.getAtIndex(JAVA_INT, 2);
    }

    /** A {@code TJCS_*} value. */
    public int colorspace() {
        return out.getAtIndex(JAVA_INT, 3);
    }

    /**
     * Decodes into {@code dst} at the given pitch. {@code width} and {@code height} must be the
     * scaled size the caller chose (TurboJPEG picks the scale that fits them).
     *
     * @return 0 on success, -1 on error ({@link #errorCode()} tells a warning from a fatal error)
     * @throws IndexOutOfBoundsException when {@code dst} cannot hold {@code pitch * height} bytes
     */
    public int decompress(
            MemorySegment jpeg,
            long size,
            MemorySegment dst,
            int width,
            int pitch,
            int height,
            int pixelFormat,
            int flags) {
        checkOpen();
        checkBounds(jpeg, size);
        if (width <= 0 || height <= 0 || pitch < width * TurboJpeg.pixelSize(pixelFormat)) {
            throw new IllegalArgumentException("bad geometry " + width + "x" + height + " pitch " + pitch);
        }
        long need = (long) pitch * height;
        if (need > dst.byteSize()) {
            throw new IndexOutOfBoundsException("destination holds " + dst.byteSize() + " bytes, decode needs " + need);
        }
        int rc = TurboJpeg.tjDecompress2(handle, jpeg, size, dst, width, pitch, height, pixelFormat, flags);
        return rc == 0 ? 0 : failed(rc);
    }

    /** The library's message for the last failed call. */
    public String errorMessage() {
        checkOpen();
        return lastError;
    }

    /** {@link TurboJpeg#TJERR_WARNING} or {@link TurboJpeg#TJERR_FATAL}, for the last failed call. */
    public int errorCode() {
        checkOpen();
        return lastErrorCode;
    }

    private void checkOpen() {
        if (handle == null) {
            throw new IllegalStateException("decompressor is closed");
        }
    }

    private static void checkBounds(MemorySegment jpeg, long size) {
        if (size < 0 || size > jpeg.byteSize()) {
            throw new IndexOutOfBoundsException("jpeg size " + size + " exceeds buffer of " + jpeg.byteSize());
        }
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
