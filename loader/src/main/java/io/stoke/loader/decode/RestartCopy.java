package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.StokeJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.DecodedImage;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/**
 * Gives a JPEG restart markers without changing one of its pixels, so that the region decoder can
 * seek in it: its DCT coefficients are rewritten as they are, sequential, with a marker every few
 * MCUs ({@code stoke_jpeg_add_restarts}, what {@code jpegtran -restart} does). A file the region
 * decoder seeks in already (sequential, with markers) is left as it is. Every copy is checked:
 * the original and the copy are decoded whole and must give the same bytes, or the original is
 * kept and the reason said. Anything else that cannot be copied (arithmetic coding, CMYK, damaged
 * data, a progressive file over the scan limit) is kept too, with its reason.
 *
 * <p>One per thread; its buffers grow to the largest file seen and its arena owns them.
 */
public final class RestartCopy implements AutoCloseable {
    /** What {@link #copy} did with a file. */
    public enum Outcome {
        /** Rewritten with restart markers: {@link #bytes()} holds the copy. */
        COPIED,
        /** Sequential with restart markers already: the region decoder seeks in it as it is. */
        SEEKABLE,
        /** Kept as it is, for {@link #reason()}. */
        KEPT
    }

    private static final int MESSAGE_BYTES = 256;

    private final int targetMcus;
    private final TransformSpec decoding;
    private final boolean verify;
    private final JpegDecoder original;
    private final JpegDecoder copied;
    private final Arena scratch = Arena.ofConfined();
    private final MemorySegment size = scratch.allocate(JAVA_LONG);
    private final MemorySegment info = scratch.allocate(JAVA_INT, StokeJpeg.RESTART_FIELDS);
    private final MemorySegment message = scratch.allocate(MESSAGE_BYTES);
    private Arena arena = Arena.ofConfined();
    private MemorySegment out = MemorySegment.NULL;
    private long length;
    private String reason;

    /**
     * @param targetMcus the restart interval aimed at (the image's is the divisor of its MCUs per
     *     row nearest it, so that rows hold whole segments; {@code stoke pack}'s default is 4)
     * @param decoding   the pixel and scan budgets, as the loader's
     * @param verify     whether each copy is decoded beside its original and compared
     */
    public RestartCopy(int targetMcus, TransformSpec decoding, boolean verify) {
        if (targetMcus < 1) {
            throw new IllegalArgumentException("restart interval must be positive: " + targetMcus);
        }
        this.targetMcus = targetMcus;
        this.decoding = decoding.withDctScaling(TransformSpec.DctScaling.NONE);
        this.verify = verify;
        this.original = verify ? new JpegDecoder(this.decoding) : null;
        this.copied = verify ? new JpegDecoder(this.decoding) : null;
    }

    /** Whether this build can copy at all (the region decoder's library, which links libjpeg, is loaded). */
    public static boolean available() {
        return StokeJpeg.available();
    }

    /** Why it cannot, in one sentence, or null. */
    public static String unavailableReason() {
        return StokeJpeg.unavailableReason();
    }

    /** Copies {@code jpeg[0, size)}, a JPEG by its bytes; see {@link Outcome}. */
    public Outcome copy(MemorySegment jpeg, long fileSize) {
        if (fileSize < 0 || fileSize > jpeg.byteSize()) {
            throw new IndexOutOfBoundsException("a file of " + fileSize + " bytes in " + jpeg.byteSize());
        }
        reason = null;
        length = 0;
        // A copy is the coefficients re-coded: rarely more than the original plus its markers, and
        // a progressive original grows by its Huffman tables' gain over sequential coding.
        long room = fileSize + fileSize / 4 + 64 * 1024;
        for (int attempt = 0; attempt < 2; attempt++, room *= 2) {
            ensure(room);
            int status = StokeJpeg.addRestarts(
                    jpeg,
                    fileSize,
                    targetMcus,
                    decoding.maxPixels(),
                    JpegDecoder.MAX_SCANS,
                    StokeJpeg.RESTART_UNLESS_SEEKABLE,
                    out,
                    out.byteSize(),
                    size,
                    info,
                    message,
                    MESSAGE_BYTES);
            if (status == StokeJpeg.OK) {
                length = size.get(JAVA_LONG, 0);
                if (length == 0) {
                    return Outcome.SEEKABLE;
                }
                return verify && !samePixels(jpeg, fileSize) ? Outcome.KEPT : Outcome.COPIED;
            }
            String why = message();
            if (!why.contains("does not fit its buffer")) {
                reason = why;
                return Outcome.KEPT;
            }
        }
        reason = "the copy did not fit " + room / 2 + " bytes";
        return Outcome.KEPT;
    }

    /**
     * Copies {@code jpeg[0, fileSize)} as {@link #copy} would and decodes its region
     * ({@code x, y, w, h} at {@code scaleNum / scaleDenom}, RGBX into {@code dst[0, dstBytes)},
     * {@code region} filled as {@link StokeJpeg#decodeRegion} fills it) as the region decoder would
     * from the original, in one pass over its entropy-coded data (a reader that has just missed
     * the copy and decodes the file now). True when both were made: {@link #bytes()} holds the
     * copy; false when neither is to be used ({@link #reason()} says why: a file {@link #copy}
     * would keep or find seekable, any warning, a 1/8 scale): the caller decodes the original
     * alone. Not for a copier that verifies (the copy is exact by construction, and the same bytes
     * as {@link #copy}'s).
     */
    public boolean copyDecoding(
            MemorySegment jpeg,
            long fileSize,
            int scaleNum,
            int scaleDenom,
            int x,
            int y,
            int w,
            int h,
            MemorySegment dst,
            long dstBytes,
            MemorySegment region) {
        if (verify) {
            throw new IllegalStateException("a verifying RestartCopy copies with copy()");
        }
        if (fileSize < 0
                || fileSize > jpeg.byteSize()
                || dstBytes > dst.byteSize()
                || region.byteSize() < 4L * StokeJpeg.REGION_FIELDS) {
            throw new IndexOutOfBoundsException("a file of " + fileSize + " bytes in " + jpeg.byteSize() + ", "
                    + dstBytes + " bytes of pixels in " + dst.byteSize() + ", a region of " + region.byteSize()
                    + " bytes");
        }
        reason = null;
        length = 0;
        long room = fileSize + fileSize / 4 + 64 * 1024; // as copy(): one try, a copy past it is declined
        ensure(room);
        int status = StokeJpeg.addRestartsDecoding(
                jpeg,
                fileSize,
                targetMcus,
                decoding.maxPixels(),
                JpegDecoder.MAX_SCANS,
                out,
                out.byteSize(),
                size,
                info,
                scaleNum,
                scaleDenom,
                x,
                y,
                w,
                h,
                dst,
                dstBytes,
                region,
                message,
                MESSAGE_BYTES);
        if (status != StokeJpeg.OK) {
            reason = message();
            return false;
        }
        length = size.get(JAVA_LONG, 0);
        return true;
    }

    /** Decodes the original and the copy whole; the reason when they differ. */
    private boolean samePixels(MemorySegment jpeg, long fileSize) {
        SampleStatus a = original.decode(jpeg, fileSize);
        SampleStatus b = copied.decode(out, length);
        if (a != SampleStatus.OK || b != SampleStatus.OK) {
            reason = "decoding " + (a != SampleStatus.OK ? "the original" : "the copy") + " failed: "
                    + (a != SampleStatus.OK ? original.message() : copied.message());
            return false;
        }
        DecodedImage x = original.decoded();
        DecodedImage y = copied.decoded();
        long bytes = 4L * x.width() * x.height();
        if (x.width() != y.width()
                || x.height() != y.height()
                || MemorySegment.mismatch(x.pixels(), 0, bytes, y.pixels(), 0, bytes) != -1) {
            reason = "the copy would decode to other pixels";
            return false;
        }
        return true;
    }

    /**
     * Decodes {@code jpeg[0, size)} whole (with {@code verify}): OK, or why not, then also in
     * {@link #reason()}. Whether a file kept as it is decodes at all.
     */
    public SampleStatus decodes(MemorySegment jpeg, long fileSize) {
        if (!verify) {
            throw new IllegalStateException("a RestartCopy made without verify decodes nothing");
        }
        SampleStatus status = original.decode(jpeg, fileSize);
        if (status != SampleStatus.OK) {
            reason = original.message();
        }
        return status;
    }

    private void ensure(long bytes) {
        if (out.byteSize() < bytes) {
            arena.close();
            arena = Arena.ofConfined();
            out = arena.allocate(Math.max(bytes, 2 * out.byteSize()));
        }
    }

    private String message() {
        String s = message.getString(0, StandardCharsets.UTF_8);
        return s.isEmpty() ? "the transcode failed" : s;
    }

    /** The copy, valid until the next {@link #copy}: {@code bytes()[0, length())}. */
    public MemorySegment bytes() {
        return out;
    }

    /** The copy's length in bytes; 0 unless {@link Outcome#COPIED}. */
    public long length() {
        return length;
    }

    /** Why the file was kept, or null. */
    public String reason() {
        return reason;
    }

    /** The restart interval written (or found), in MCUs. */
    public int interval() {
        return info.getAtIndex(JAVA_INT, StokeJpeg.RESTART_INTERVAL);
    }

    /** Whether the original was progressive. */
    public boolean wasProgressive() {
        return info.getAtIndex(JAVA_INT, StokeJpeg.RESTART_PROGRESSIVE) != 0;
    }

    @Override
    public void close() {
        arena.close();
        scratch.close();
        if (verify) {
            original.close();
            copied.close();
        }
    }
}
