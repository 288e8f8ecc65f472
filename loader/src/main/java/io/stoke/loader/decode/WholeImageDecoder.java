package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.stoke.ffm.StokeImage;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import io.stoke.loader.resample.DecodedImage;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Decodes one PNG or WebP at a time into a scratch RGBX image owned by this decoder, with PIL's
 * {@code convert("RGB")} pixels (libspng and libwebp through {@link StokeImage}): whole, or, for a
 * WebP under the training transform, only the region around the crop box (libwebp's cropping: no
 * rows below it are decoded, and only it is converted to RGB). One per worker thread. The header's
 * claimed size is checked against the pixel budget, and the scratch image sized to what is decoded,
 * before the library writes a byte; the library checks the buffer's size again.
 */
public final class WholeImageDecoder implements AutoCloseable {
    private static final int MESSAGE_BYTES = 256;
    /**
     * Pixels decoded around a box, so that the edge effects of libwebp's cropped decode fall outside
     * it: its fancy upsampling reads a chroma row and column past a cut edge. (1 was already
     * byte-identical to the whole decode over 300 random boxes of a lossy photograph; 0 was not.)
     */
    private static final int REGION_MARGIN = 2;

    private final TransformSpec spec;
    private final Arena fixed = Arena.ofConfined();
    private final MemorySegment info = fixed.allocate(4L * StokeImage.INFO_FIELDS, 4);
    private final MemorySegment nativeMessage = fixed.allocate(MESSAGE_BYTES);
    private final MemorySegment region = fixed.allocate(4L * StokeImage.REGION_FIELDS, 4);
    // Nothing until the first PNG or WebP: every worker has one, and most datasets hold none.
    private final ScratchImage scratchImage = new ScratchImage(0);
    private MemorySegment scratch = scratchImage.segment();
    private ImageFormat format;
    // The image's size, from its header.
    private int originalWidth;
    private int originalHeight;
    // What image() holds: a width x height region of the image from (regionX, regionY).
    private final DecodedImage decoded = new DecodedImage();
    private int width;
    private int height;
    private int regionX;
    private int regionY;
    private String message;

    public WholeImageDecoder(TransformSpec spec) {
        this.spec = spec;
    }

    /**
     * Reads and checks the header of {@code data[0, size)}, a {@link ImageFormat#PNG} or
     * {@link ImageFormat#WEBP}: {@link #originalWidth()} and {@link #originalHeight()} are then its
     * size, within the pixel budget, and nothing has been decoded.
     */
    public SampleStatus readHeader(ImageFormat format, MemorySegment data, long size) {
        this.format = format;
        message = null;
        originalWidth = 0;
        originalHeight = 0;
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
        originalWidth = w;
        originalHeight = h;
        return SampleStatus.OK;
    }

    /** Decodes the image whose header {@link #readHeader} just read, whole, into {@link #decoded()}. */
    public SampleStatus decode(MemorySegment data, long size) {
        if (originalWidth < 1) {
            throw new IllegalStateException("decode without a header read successfully first");
        }
        width = originalWidth;
        height = originalHeight;
        regionX = 0;
        regionY = 0;
        long bytes = 4L * width * height;
        ensureScratch(bytes + Resampler.SLACK);
        int rc = format == ImageFormat.PNG
                ? StokeImage.pngDecodeRgbx(data, size, spec.maxPixels(), scratch, bytes, nativeMessage, MESSAGE_BYTES)
                : StokeImage.webpDecodeRgbx(data, size, spec.maxPixels(), scratch, bytes, nativeMessage, MESSAGE_BYTES);
        return rc == StokeImage.OK ? SampleStatus.OK : failed(rc);
    }

    /**
     * Decodes at least {@code box} of the image whose header {@link #readHeader} just read: a WebP
     * only the region around it ({@link #regionX()}, {@link #regionY()}, {@link #width()} x
     * {@link #height()}), whose pixels are the whole decode's; a PNG whole.
     */
    public SampleStatus decodeBox(MemorySegment data, long size, CropBox box) {
        if (format != ImageFormat.WEBP) {
            return decode(data, size);
        }
        if (originalWidth < 1) {
            throw new IllegalStateException("decodeBox without a header read successfully first");
        }
        box.checkInside(originalWidth, originalHeight);
        int x0 = Math.max(0, box.left - REGION_MARGIN);
        int y0 = Math.max(0, box.top - REGION_MARGIN);
        int x1 = Math.min(originalWidth, box.left + box.width + REGION_MARGIN);
        int y1 = Math.min(originalHeight, box.top + box.height + REGION_MARGIN);
        // libwebp may start the region a column and a row earlier (on even ones).
        long bytes = 4L * (x1 - x0 + 1) * (y1 - y0 + 1);
        ensureScratch(bytes + Resampler.SLACK);
        int rc = StokeImage.webpDecodeRegionRgbx(
                data,
                size,
                spec.maxPixels(),
                x0,
                y0,
                x1 - x0,
                y1 - y0,
                scratch,
                bytes,
                region,
                nativeMessage,
                MESSAGE_BYTES);
        if (rc != StokeImage.OK) {
            return failed(rc);
        }
        regionX = region.getAtIndex(JAVA_INT, StokeImage.REGION_LEFT);
        regionY = region.getAtIndex(JAVA_INT, StokeImage.REGION_TOP);
        width = region.getAtIndex(JAVA_INT, StokeImage.REGION_WIDTH);
        height = region.getAtIndex(JAVA_INT, StokeImage.REGION_HEIGHT);
        if (regionX > box.left
                || regionY > box.top
                || regionX + width < box.left + box.width
                || regionY + height < box.top + box.height
                || 4L * width * height > bytes) {
            throw new IllegalStateException("libwebp decoded the region " + width + "x" + height + "+" + regionX + "+"
                    + regionY + ", which does not hold the box " + box + " or overran its buffer");
        }
        return SampleStatus.OK;
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
        scratch = scratchImage.ensure(bytes);
    }

    /**
     * What the last call left: after {@link #readHeader}, the original size; after a decode, its
     * pixels (RGBX, tightly packed): the whole image, or a region of it. PNG and WebP decode at full
     * size, so the decoded size is the original's. A view this decoder owns and re-points at each
     * call, valid until its next decode.
     */
    public DecodedImage decoded() {
        return decoded.set(
                scratch, width, height, regionX, regionY, originalWidth, originalHeight, originalWidth, originalHeight);
    }

    /** Details of the last failure. */
    public String message() {
        return message;
    }

    @Override
    public void close() {
        scratchImage.close();
        fixed.close();
    }
}
