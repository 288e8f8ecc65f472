package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.stoke.ffm.JpegDecompressor;
import io.stoke.ffm.ScalingFactors;
import io.stoke.ffm.StokeJpeg;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.DecodedImage;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * Decodes one JPEG at a time into a scratch image owned by this decoder, always as RGBX (gray is
 * expanded by libjpeg-turbo, CMYK/YCCK converted here), at the smallest DCT scale that still
 * covers the resize target. One per worker thread: it owns a {@code tjhandle}.
 *
 * <p>Before libjpeg-turbo writes a byte, the header's claimed size is checked in Java against the
 * pixel budget, and the scratch image is sized to exactly what the chosen scale produces.
 */
public final class JpegDecoder implements AutoCloseable {
    private static final ScalingFactors FACTORS = ScalingFactors.query();
    private static final int DECODE_FLAGS = TurboJpeg.TJFLAG_LIMITSCANS;
    /** The progressive scans allowed, as TurboJPEG's TJFLAG_LIMITSCANS allows. */
    static final int MAX_SCANS = 500;
    /**
     * Scaled pixels decoded around a box, so that the edge effects of a cut region fall outside it:
     * fancy upsampling reads one chroma sample past a pixel, two pixels at 2x subsampling. (0 gives
     * pixels a level off at the cut edges; 1 and 2 do not: how that was checked is in
     * docs/design.md, "Region decode".)
     */
    private static final int REGION_MARGIN = 2;

    private final TransformSpec spec;
    private final JpegDecompressor tj = new JpegDecompressor();
    private final ScratchImage scratchImage = ScratchImage.forDecodedRows(1024L * 1024 * 3);
    private MemorySegment scratch = scratchImage.segment();
    private int width;
    private int height;
    private int originalWidth;
    private int originalHeight;
    // Where image() lies in the image as decoded at the chosen scale (a region, or all of it).
    private final DecodedImage decoded = new DecodedImage();
    private int regionX;
    private int regionY;
    private int scaledWidth;
    private int scaledHeight;
    private final Arena outArena = Arena.ofConfined();
    private final MemorySegment region = outArena.allocate(4L * StokeJpeg.REGION_FIELDS, 4);
    private final MemorySegment regionMessage = outArena.allocate(256);
    private int regionFlags;
    private int regionPath;
    private boolean copied;
    private String message;

    public JpegDecoder(TransformSpec spec) {
        this.spec = spec;
    }

    /**
     * Decodes {@code jpeg[0, size)} at the smallest allowed DCT scale whose shorter side still
     * reaches the resize target: the evaluation transform's decode.
     *
     * @return {@link SampleStatus#OK} with the image in {@link #decoded()}; otherwise the reason,
     *     with details in {@link #message()}
     */
    public SampleStatus decode(MemorySegment jpeg, long size) {
        SampleStatus status = readHeader(jpeg, size);
        return status != SampleStatus.OK
                ? status
                : decodePixels(jpeg, size, Math.min(originalWidth, originalHeight), spec.resize());
    }

    /**
     * Reads and checks the header of {@code jpeg[0, size)}: {@link #originalWidth()} and
     * {@link #originalHeight()} are then the image's size, checked against the pixel budget, and
     * nothing has been decoded.
     */
    public SampleStatus readHeader(MemorySegment jpeg, long size) {
        message = null;
        originalWidth = 0;
        originalHeight = 0;
        if (size < 4 || jpeg.get(JAVA_BYTE, 0) != (byte) 0xFF || jpeg.get(JAVA_BYTE, 1) != (byte) 0xD8) {
            message = describeSignature(jpeg, size);
            return SampleStatus.NOT_IMAGE;
        }
        if (tj.readHeader(jpeg, size) != 0) {
            message = tj.errorMessage();
            return message.startsWith("Premature end") ? SampleStatus.TRUNCATED : SampleStatus.CORRUPT;
        }
        originalWidth = tj.width();
        originalHeight = tj.height();
        if (originalWidth < 1 || originalHeight < 1) {
            message = "header claims " + originalWidth + "x" + originalHeight;
            return SampleStatus.CORRUPT;
        }
        long pixels = (long) originalWidth * originalHeight;
        if (pixels > spec.maxPixels()) {
            message = "header claims " + originalWidth + "x" + originalHeight + " = " + pixels
                    + " pixels, over the budget of " + spec.maxPixels();
            return SampleStatus.TOO_LARGE;
        }
        return SampleStatus.OK;
    }

    /**
     * Decodes the image whose header {@link #readHeader} just read, at the smallest allowed DCT
     * scale at which a length of {@code covered} original pixels still spans at least
     * {@code target} decoded ones (the resize never enlarges what DCT scaling shrank).
     */
    public SampleStatus decodePixels(MemorySegment jpeg, long size, int covered, int target) {
        if (originalWidth < 1) {
            throw new IllegalStateException("decodePixels without a header read successfully first");
        }
        int colorspace = tj.colorspace();
        boolean cmyk = colorspace == TurboJpeg.TJCS_CMYK || colorspace == TurboJpeg.TJCS_YCCK;
        // RGBX: a pixel is one aligned 4-byte word, which the resampler's kernels rely on.
        int pixelFormat = cmyk ? TurboJpeg.TJPF_CMYK : TurboJpeg.TJPF_RGBX;
        int factor = chooseFactor(covered, target);
        int num = FACTORS.num()[factor];
        int denom = FACTORS.denom()[factor];
        width = TurboJpeg.scaled(originalWidth, num, denom);
        height = TurboJpeg.scaled(originalHeight, num, denom);
        regionX = 0;
        regionY = 0;
        scaledWidth = width;
        scaledHeight = height;
        int pitch = width * TurboJpeg.pixelSize(pixelFormat);
        ensureScratch((long) pitch * height + Resampler.SLACK);
        int rc = tj.decompress(jpeg, size, scratch, width, pitch, height, pixelFormat, DECODE_FLAGS);
        if (rc != 0) {
            String error = tj.errorMessage();
            if (tj.errorCode() == TurboJpeg.TJERR_FATAL) {
                message = error;
                return error.contains("Unsupported") || error.contains("unsupported")
                        ? SampleStatus.UNSUPPORTED
                        : SampleStatus.CORRUPT;
            }
            if (!harmless(error)) {
                message = error;
                // libjpeg-turbo fills what it could not decode with grey: that image is not the file's.
                return error.toLowerCase(Locale.ROOT).contains("premature end")
                        ? SampleStatus.TRUNCATED
                        : SampleStatus.CORRUPT;
            }
        }
        if (cmyk) {
            cmykToRgb();
        }
        return SampleStatus.OK;
    }

    /**
     * Decodes, of the image whose header {@link #readHeader} just read, only the rows and columns
     * that {@code box} keeps (Stoke's region decoder: libjpeg's {@code jpeg_crop_scanline} and
     * {@code jpeg_skip_scanlines}), at the smallest allowed DCT scale at which the box's shorter
     * side still spans {@code target} pixels. {@link #decoded()} then holds {@link #width()} x
     * {@link #height()} pixels starting at ({@link #regionX()}, {@link #regionY()}) of the
     * {@link #scaledWidth()} x {@link #scaledHeight()} image. Where the file has restart markers
     * (a baseline file with a DRI segment: {@code stoke pack}'s, many cameras'), only the
     * entropy-coded segments that hold the box are decoded ({@link #regionPath()}). CMYK images,
     * and every image where the region decoder is not available (said once), are decoded whole
     * instead.
     */
    public SampleStatus decodeBox(MemorySegment jpeg, long size, CropBox box, int target) {
        return decodeBox(jpeg, size, box, Math.min(box.width, box.height), target);
    }

    /**
     * {@link #decodeBox(MemorySegment, long, CropBox, int)} at the DCT scale that
     * {@link #decodePixels decodePixels(jpeg, size, covered, target)} would choose: the evaluation
     * transform's, whose resize is computed over the whole image and which needs only the part of
     * it the centre crop reads.
     */
    public SampleStatus decodeBox(MemorySegment jpeg, long size, CropBox box, int covered, int target) {
        return decodeBox(jpeg, size, box, covered, target, null);
    }

    /**
     * {@link #decodeBox(MemorySegment, long, CropBox, int, int)}, and where {@code copyTo} is not
     * null, the file's restart-marker copy made into it in the same pass over its entropy-coded
     * data ({@link RestartCopy#copyDecoding}); {@link #copied()} says whether it was. Where it was
     * not (the copier declined: its reason says why), the box is decoded as without one.
     */
    public SampleStatus decodeBox(
            MemorySegment jpeg, long size, CropBox box, int covered, int target, RestartCopy copyTo) {
        copied = false;
        if (originalWidth < 1) {
            throw new IllegalStateException("decodeBox without a header read successfully first");
        }
        regionPath = StokeJpeg.PATH_SEQUENTIAL;
        int colorspace = tj.colorspace();
        if (!RegionDecoder.AVAILABLE || colorspace == TurboJpeg.TJCS_CMYK || colorspace == TurboJpeg.TJCS_YCCK) {
            return decodePixels(jpeg, size, covered, target);
        }
        box.checkInside(originalWidth, originalHeight);
        int factor = chooseFactor(covered, target);
        int num = FACTORS.num()[factor];
        int denom = FACTORS.denom()[factor];
        int sw = TurboJpeg.scaled(originalWidth, num, denom);
        int sh = TurboJpeg.scaled(originalHeight, num, denom);
        // The box in scaled pixels, widened to whole pixels (what the resampler reads of it), then
        // by a margin: libjpeg's fancy upsampling of subsampled chroma has no neighbour at a
        // region's cut edges, so its outermost pixels differ by a level from a whole decode's.
        int x0 = (int) Math.max(0, (long) box.left * sw / originalWidth - REGION_MARGIN);
        int y0 = (int) Math.max(0, (long) box.top * sh / originalHeight - REGION_MARGIN);
        int x1 = (int) Math.min(
                sw, ((long) (box.left + box.width) * sw + originalWidth - 1) / originalWidth + REGION_MARGIN);
        int y1 = (int) Math.min(
                sh, ((long) (box.top + box.height) * sh + originalHeight - 1) / originalHeight + REGION_MARGIN);
        // jpeg_crop_scanline widens the columns to whole iMCUs, at most 32 scaled pixels each side.
        long capacity = (long) (x1 - x0 + 64) * 4 * (y1 - y0);
        ensureScratch(capacity + Resampler.SLACK);
        copied = copyTo != null
                && copyTo.copyDecoding(jpeg, size, num, denom, x0, y0, x1 - x0, y1 - y0, scratch, capacity, region);
        int rc = copied
                ? StokeJpeg.OK
                : StokeJpeg.decodeRegion(
                        jpeg,
                        size,
                        num,
                        denom,
                        x0,
                        y0,
                        x1 - x0,
                        y1 - y0,
                        spec.maxPixels(),
                        MAX_SCANS,
                        regionFlags,
                        scratch,
                        capacity,
                        region,
                        regionMessage,
                        (int) regionMessage.byteSize());
        if (rc != StokeJpeg.OK) {
            String error = regionMessage.getString(0);
            if (rc == StokeJpeg.ERROR || !harmless(error)) {
                message = error;
                return error.toLowerCase(Locale.ROOT).contains("premature end")
                        ? SampleStatus.TRUNCATED
                        : error.contains("Unsupported") || error.contains("unsupported")
                                ? SampleStatus.UNSUPPORTED
                                : SampleStatus.CORRUPT;
            }
        }
        regionPath = region.getAtIndex(JAVA_INT, StokeJpeg.REGION_PATH);
        message = rc == StokeJpeg.OK && regionPath == StokeJpeg.PATH_FELL_BACK ? regionMessage.getString(0) : null;
        regionX = region.getAtIndex(JAVA_INT, StokeJpeg.REGION_X);
        regionY = region.getAtIndex(JAVA_INT, StokeJpeg.REGION_Y);
        width = region.getAtIndex(JAVA_INT, StokeJpeg.REGION_WIDTH);
        height = region.getAtIndex(JAVA_INT, StokeJpeg.REGION_HEIGHT);
        scaledWidth = sw;
        scaledHeight = sh;
        if (regionX > x0
                || regionX + (long) width < x1
                || regionY != y0
                || height != y1 - y0
                || (long) width * 4 * height > capacity) {
            throw new IllegalStateException("the region decoder returned " + width + "x" + height + "+" + regionX + "+"
                    + regionY + " for " + (x1 - x0) + "x" + (y1 - y0) + "+" + x0 + "+" + y0);
        }
        return SampleStatus.OK;
    }

    /** The width of the image {@link #readHeader} read, at the scale {@code decodePixels(.., covered, target)} chooses. */
    public int scaledWidthAt(int covered, int target) {
        int factor = chooseFactor(covered, target);
        return TurboJpeg.scaled(originalWidth, FACTORS.num()[factor], FACTORS.denom()[factor]);
    }

    /** The height of the image {@link #readHeader} read, at the scale {@code decodePixels(.., covered, target)} chooses. */
    public int scaledHeightAt(int covered, int target) {
        int factor = chooseFactor(covered, target);
        return TurboJpeg.scaled(originalHeight, FACTORS.num()[factor], FACTORS.denom()[factor]);
    }

    /** Whether the last {@link #decodeBox} made the copy its caller asked for. */
    public boolean copied() {
        return copied;
    }

    /** Whether region decoding can be used; a missing decoder is said once, loudly. */
    private static final class RegionDecoder {
        static final boolean AVAILABLE = check();

        private static boolean check() {
            if (StokeJpeg.available()) {
                return true;
            }
            System.err.println(
                    "stoke: WARNING: " + StokeJpeg.unavailableReason()
                            + "; the training transform, and the evaluation one on images already at the resize's size, decode whole images instead.");
            return false;
        }
    }

    /**
     * Whether {@link #decodeBox} seeks to a file's restart markers (the default) or always decodes
     * the rows above the box (to measure one against the other: the pixels are the same).
     */
    public void seekRestartMarkers(boolean seek) {
        regionFlags = seek ? 0 : StokeJpeg.NO_SEEK;
    }

    /**
     * How the last {@link #decodeBox} decoded: {@link StokeJpeg#PATH_SEEKED} from the restart
     * segments that hold the box, {@link StokeJpeg#PATH_FELL_BACK} sequentially because the file's
     * restart markers could not be trusted ({@link #message()} says why), otherwise
     * {@link StokeJpeg#PATH_SEQUENTIAL}.
     */
    public int regionPath() {
        return regionPath;
    }

    /**
     * Warnings after which the image is still complete: stray bytes between segments, and
     * metadata libjpeg does not recognise. Everything else (a Huffman error, data cut short)
     * means part of the picture is invented, so the sample is reported rather than delivered.
     */
    private static boolean harmless(String warning) {
        return warning.contains("extraneous bytes")
                || warning.contains("JFIF")
                || warning.contains("thumbnail")
                || warning.contains("Adobe")
                || warning.contains("APP");
    }

    /** Index of the smallest allowed scale factor whose scaled {@code shorter} still reaches {@code target}. */
    private int chooseFactor(int shorter, int target) {
        int best = -1;
        long bestScaled = Long.MAX_VALUE;
        for (int i = 0; i < FACTORS.size(); i++) {
            int num = FACTORS.num()[i];
            int denom = FACTORS.denom()[i];
            boolean allowed = num == denom
                    || switch (spec.dctScaling()) {
                        case NONE -> false;
                        case POWERS_OF_TWO -> num == 1 && (denom == 2 || denom == 4 || denom == 8);
                        case ALL -> num < denom;
                    };
            if (!allowed) {
                continue;
            }
            long scaled = TurboJpeg.scaled(shorter, num, denom);
            boolean covers = scaled >= target || num == denom;
            if (covers && (num <= denom) && scaled < bestScaled) {
                best = i;
                bestScaled = scaled;
            }
        }
        return best;
    }

    private void ensureScratch(long bytes) {
        scratch = scratchImage.ensure(bytes);
    }

    /** Adobe-style inverted CMYK (what libjpeg-turbo returns) to RGBX, in place: R = C*K/255. */
    private void cmykToRgb() {
        long n = (long) width * height;
        for (long i = 0; i < n; i++) {
            int c = scratch.get(JAVA_BYTE, 4 * i) & 0xFF;
            int m = scratch.get(JAVA_BYTE, 4 * i + 1) & 0xFF;
            int y = scratch.get(JAVA_BYTE, 4 * i + 2) & 0xFF;
            int k = scratch.get(JAVA_BYTE, 4 * i + 3) & 0xFF;
            scratch.set(JAVA_BYTE, 4 * i, (byte) ((c * k + 127) / 255));
            scratch.set(JAVA_BYTE, 4 * i + 1, (byte) ((m * k + 127) / 255));
            scratch.set(JAVA_BYTE, 4 * i + 2, (byte) ((y * k + 127) / 255));
            scratch.set(JAVA_BYTE, 4 * i + 3, (byte) 0xFF);
        }
    }

    private static String describeSignature(MemorySegment data, long size) {
        if (size >= 8
                && (data.get(JAVA_BYTE, 0) & 0xFF) == 0x89
                && data.get(JAVA_BYTE, 1) == 'P'
                && data.get(JAVA_BYTE, 2) == 'N'
                && data.get(JAVA_BYTE, 3) == 'G') {
            return "the file holds PNG data, not JPEG";
        }
        if (size >= 3
                && data.get(JAVA_BYTE, 0) == 'G'
                && data.get(JAVA_BYTE, 1) == 'I'
                && data.get(JAVA_BYTE, 2) == 'F') {
            return "the file holds GIF data, not JPEG";
        }
        if (size < 4) {
            return "only " + size + " bytes: too short for a JPEG";
        }
        return String.format(
                "no JPEG start-of-image marker (first bytes %02x %02x)",
                data.get(JAVA_BYTE, 0) & 0xFF, data.get(JAVA_BYTE, 1) & 0xFF);
    }

    /**
     * What the last call left: after {@link #readHeader}, the original size; after a decode, its
     * pixels (RGBX, tightly packed) and where they lie in the DCT-scaled image. A view this decoder
     * owns and re-points at each call, valid until its next decode.
     */
    public DecodedImage decoded() {
        return decoded.set(
                scratch, width, height, regionX, regionY, scaledWidth, scaledHeight, originalWidth, originalHeight);
    }

    /** Details of the last failure. */
    public String message() {
        return message;
    }

    @Override
    public void close() {
        tj.close();
        scratchImage.close();
        outArena.close();
    }
}
