package io.stoke.loader.transform;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.stoke.ffm.StokeImage;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Decodes one PNG or WebP at a time, whole, into a scratch RGBX image owned by this decoder, with
 * PIL's {@code convert("RGB")} pixels (libspng and libwebp through {@link StokeImage}). One per
 * worker thread. The header's claimed size is checked against the pixel budget, and the scratch
 * image sized to it, before the library writes a byte; the library checks the buffer's size again.
 */
public final class WholeImageDecoder implements AutoCloseable {
    private static final int MESSAGE_BYTES = 256;

    private final TransformSpec spec;
    private final Arena fixed = Arena.ofConfined();
    private final MemorySegment info = fixed.allocate(4L * StokeImage.INFO_FIELDS, 4);
    private final MemorySegment nativeMessage = fixed.allocate(MESSAGE_BYTES);
    private Arena scratchArena = Arena.ofConfined();
    private MemorySegment scratch;
    private ImageFormat format;
    private int width;
    private int height;
    private String message;

    public WholeImageDecoder(TransformSpec spec) {
        this.spec = spec;
        scratch = scratchArena.allocate(1024L * 1024 * 4, 64);
    }

    /**
     * Reads and checks the header of {@code data[0, size)}, a {@link ImageFormat#PNG} or
     * {@link ImageFormat#WEBP}: {@link #width()} and {@link #height()} are then its size, within the
     * pixel budget, and nothing has been decoded.
     */
    public SampleStatus readHeader(ImageFormat format, MemorySegment data, long size) {
        this.format = format;
        message = null;
        width = 0;
        height = 0;
        if (!StokeImage.available()) {
            message = format.title() + " is not decoded here: " + StokeImage.unavailableReason();
            return SampleStatus.FORMAT_NOT_DECODED;
        }
        int rc = switch (format) {
            case PNG -> StokeImage.pngInfo(data, size, info, nativeMessage, MESSAGE_BYTES);
            case WEBP -> StokeImage.webpInfo(data, size, info, nativeMessage, MESSAGE_BYTES);
            default -> throw new IllegalArgumentException(format + " is not decoded by " + getClass());
        };
        if (rc != StokeImage.OK) {
            return failed(rc);
        }
        int w = info.getAtIndex(JAVA_INT, StokeImage.INFO_WIDTH);
        int h = info.getAtIndex(JAVA_INT, StokeImage.INFO_HEIGHT);
        if (w < 1 || h < 1) {
            message = format.title() + " header claims " + w + "x" + h;
            return SampleStatus.CORRUPT;
        }
        long pixels = (long) w * h;
        if (pixels > spec.maxPixels()) {
            message = format.title() + " header claims " + w + "x" + h + " = " + pixels + " pixels, over the budget of "
                    + spec.maxPixels();
            return SampleStatus.TOO_LARGE;
        }
        width = w;
        height = h;
        return SampleStatus.OK;
    }

    /** Decodes the image whose header {@link #readHeader} just read, whole, into {@link #image()}. */
    public SampleStatus decode(MemorySegment data, long size) {
        if (width < 1) {
            throw new IllegalStateException("decode without a header read successfully first");
        }
        long bytes = 4L * width * height;
        ensureScratch(bytes + Resampler.SLACK);
        int rc = format == ImageFormat.PNG
                ? StokeImage.pngDecodeRgbx(data, size, spec.maxPixels(), scratch, bytes, nativeMessage, MESSAGE_BYTES)
                : StokeImage.webpDecodeRgbx(data, size, spec.maxPixels(), scratch, bytes, nativeMessage, MESSAGE_BYTES);
        return rc == StokeImage.OK ? SampleStatus.OK : failed(rc);
    }

    private SampleStatus failed(int rc) {
        message = format.title() + ": " + nativeMessage.getString(0);
        return switch (rc) {
            case StokeImage.TRUNCATED -> SampleStatus.TRUNCATED;
            case StokeImage.TOO_LARGE -> SampleStatus.TOO_LARGE;
            case StokeImage.UNSUPPORTED -> SampleStatus.UNSUPPORTED;
            default -> SampleStatus.CORRUPT;
        };
    }

    private void ensureScratch(long bytes) {
        if (scratch.byteSize() < bytes) {
            Arena next = Arena.ofConfined();
            MemorySegment bigger = next.allocate(Math.max(bytes, scratch.byteSize() * 3 / 2), 64);
            scratchArena.close();
            scratchArena = next;
            scratch = bigger;
        }
    }

    /** The decoded image, {@link #width()} x {@link #height()} RGBX pixels (4 bytes each), tightly packed. */
    public MemorySegment image() {
        return scratch;
    }

    public int width() {
        return width;
    }

    public int height() {
        return height;
    }

    /** Details of the last failure. */
    public String message() {
        return message;
    }

    @Override
    public void close() {
        scratchArena.close();
        fixed.close();
    }
}
