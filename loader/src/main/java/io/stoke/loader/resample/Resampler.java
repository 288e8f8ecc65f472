package io.stoke.loader.resample;

import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Resize-shorter-side then center-crop, computed only for the pixels the crop keeps, written
 * straight into the caller's segment.
 *
 * <p>The arithmetic is PIL's {@code Image.resize(..., BILINEAR)} (the antialiased "triangle"
 * filter whose support widens with the downscale factor, 22-bit fixed-point weights, a horizontal
 * pass rounded to 8 bits, then a vertical pass), or with {@link TransformSpec#interpolation} its
 * {@code BICUBIC} (the same passes with the cubic filter) or {@code NEAREST} (PIL's affine scale,
 * one source pixel per output, run as one-tap passes of weight 1), and the geometry is torchvision's
 * {@code Resize(size)} and {@code CenterCrop(size)}. From the same decoded pixels the output is
 * identical to torchvision's PIL pipeline. {@link #resize} is the same filter without a crop (for
 * writing resized images, e.g. {@code stoke pack}). One per worker thread: it owns its scratch memory.
 */
public final class Resampler implements AutoCloseable {
    private static final int PRECISION_BITS = ResampleKernels.PRECISION_BITS;
    /** Bytes past the end of scratch images that 8-byte vector loads and stores may touch. */
    public static final int SLACK = 64;

    private final TransformSpec spec;
    private final ResampleKernels kernels;
    private final TransformSpec.Interpolation interpolation;
    /** The filter's support at scale 1, in source pixels (PIL's {@code struct filter}); nearest reads within bilinear's. */
    private final double support;

    private final int crop;
    /**
     * The kernels' arguments: the coefficients and scratch, sized for the square output (a plain
     * resize to more pixels grows them, once per new maximum), and the image's extents, re-set for
     * every image.
     */
    private final KernelArguments args = new KernelArguments();
    /** One output position's filter values ({@link #coefficients}), grown to the widest taps seen. */
    private double[] filterValues = new double[16];

    /** What the coefficients held were computed for, per axis. */
    private final AxisKey hKey = new AxisKey();

    private final AxisKey vKey = new AxisKey();
    private final float[] normalise; // [256 * channel + value] -> (value / 255 - mean) / std
    private Arena tmpArena = Arena.ofConfined();
    // Owned flyweights, re-pointed at every call: no allocation per image.
    private final DecodedImage whole = new DecodedImage();
    private final Plan plan = new Plan();

    public Resampler(TransformSpec spec) {
        this(spec, ResampleKernels.best());
    }

    Resampler(TransformSpec spec, ResampleKernels kernels) {
        this.spec = spec;
        this.kernels = kernels;
        this.crop = spec.crop();
        this.interpolation = spec.interpolation();
        this.support = interpolation == TransformSpec.Interpolation.BICUBIC ? 2.0 : 1.0;
        args.hBounds = new int[2 * crop];
        args.vBounds = new int[2 * crop];
        args.hWeights = new int[crop * 8];
        args.vWeights = new int[crop * 8];
        args.acc = new int[crop * 4];
        normalise = new float[3 * 256];
        for (int c = 0; c < 3; c++) {
            for (int v = 0; v < 256; v++) {
                normalise[256 * c + v] = (v / 255f - spec.mean()[c]) / spec.std()[c];
            }
        }
        args.tmp = tmpArena.allocate(512L * crop * 4 + SLACK, 64);
    }

    /** The side of the square output, in pixels. */
    public int outputSide() {
        return crop;
    }

    /** torchvision {@code Resize(size)} output width for an image of {@code w x h}. */
    public static int resizedWidth(int size, int w, int h) {
        return w <= h ? size : (int) ((double) size * w / h);
    }

    /** torchvision {@code Resize(size)} output height for an image of {@code w x h}. */
    public static int resizedHeight(int size, int w, int h) {
        return w <= h ? (int) ((double) size * h / w) : size;
    }

    /** The evaluation transform's resized width: {@code resize} when squashed, else the shorter side's resize. */
    private int evalWidth(int w, int h) {
        return spec.squash() ? spec.resize() : resizedWidth(spec.resize(), w, h);
    }

    /** The evaluation transform's resized height: {@code resize} when squashed, else the shorter side's resize. */
    private int evalHeight(int w, int h) {
        return spec.squash() ? spec.resize() : resizedHeight(spec.resize(), w, h);
    }

    /** torchvision {@code CenterCrop}: {@code int(round((full - crop) / 2))}, Python rounding half to even. */
    public static int cropOffset(int full, int crop) {
        return (int) Math.rint((full - crop) / 2.0);
    }

    /**
     * Writes an image that already has the output's size, {@code crop x crop} RGB uint8 channels
     * last (a raw shard's sample), as one sample at {@code dst[offset]}: copied for uint8 output,
     * normalised into channels-first float32 otherwise. No resize: it would be the identity.
     */
    public void writeRgb(MemorySegment src, long srcOffset, MemorySegment dst, long offset) {
        kernels.store(src, srcOffset, 3L * crop, 3, crop, crop, floatTable(), dst, offset);
    }

    /** The normalisation table for float32 output, null for uint8 (what {@link ResampleKernels#store} takes). */
    private float[] floatTable() {
        return spec.output() == TransformSpec.Output.UINT8_HWC ? null : normalise;
    }

    /**
     * Resizes the whole of {@code src} (an RGBX image of {@code srcW x srcH}, 4 bytes a pixel,
     * decoded at full size) to {@code outW x outH} and writes it as uint8 RGB, 3 bytes a pixel,
     * rows end to end, at {@code dst[offset]}, whatever this resampler's output type: PIL's
     * {@code img.resize((outW, outH), Image.BILINEAR, reducing_gap=None)} (or the spec's other
     * {@link TransformSpec#interpolation}), the filter of
     * {@link #resizeCenterCrop} (which equals this followed by a center crop). Upscaling works too.
     */
    public void resize(MemorySegment src, int srcW, int srcH, int outW, int outH, MemorySegment dst, long offset) {
        if (outW < 1 || outH < 1 || outW > 65535 || outH > 65535) {
            throw new IllegalArgumentException("output size " + outW + "x" + outH + " outside 1..65535");
        }
        plan.box(0, srcW, 0, srcH)
                .output(outW, outH)
                .window(0, 0, outW, outH)
                .flip(false)
                .rgb(true);
        run(whole.whole(src, srcW, srcH, srcW, srcH), dst, offset);
    }

    /**
     * Resizes {@code src} (an RGBX image of {@code srcW x srcH}, 4 bytes a pixel, possibly DCT-scaled) as if the
     * original were {@code origW x origH}, crops, and writes one sample at {@code dst[offset]}: the
     * evaluation transform, torchvision's {@code CenterCrop(crop)(Resize(resize)(img))}.
     */
    public void resizeCenterCrop(
            MemorySegment src, int srcW, int srcH, int origW, int origH, MemorySegment dst, long offset) {
        resizeCenterCrop(whole.whole(src, srcW, srcH, origW, origH), dst, offset);
    }

    /**
     * {@link #resizeCenterCrop(MemorySegment, int, int, int, int, MemorySegment, long)} from what a
     * decoder holds, possibly a region of the decoded image; the region must hold every pixel the
     * crop reads ({@link #evalSourceBox}). The coefficients are the whole image's, so the bytes are
     * those of the whole decode.
     */
    public void resizeCenterCrop(DecodedImage src, MemorySegment dst, long offset) {
        int origW = src.originalWidth();
        int origH = src.originalHeight();
        int outW = evalWidth(origW, origH);
        int outH = evalHeight(origW, origH);
        int left = cropOffset(outW, crop);
        int top = cropOffset(outH, crop);
        if (identity && outW == origW && outH == origH && src.decodedWidth() == origW && src.decodedHeight() == origH) {
            // Already the resize's size (a packed dataset): PIL's resize returns a copy, so only the crop is left.
            copyCrop(src, left, top, dst, offset);
            return;
        }
        plan.box(0, origW, 0, origH)
                .output(outW, outH)
                .window(left, top, crop, crop)
                .flip(false)
                .rgb(false);
        run(src, dst, offset);
    }

    /**
     * Sets {@code box} to the part of an {@code origW x origH} image (in its own pixels) that the
     * evaluation transform's centre crop reads when the image is decoded at
     * {@code decodedW x decodedH}: the filter's taps of the crop's first and last outputs on each
     * axis, widened by a pixel (the taps grow monotonically with the output). Decoding only this
     * region gives the whole decode's bytes.
     */
    public void evalSourceBox(int origW, int origH, int decodedW, int decodedH, CropBox box) {
        int outW = evalWidth(origW, origH);
        int outH = evalHeight(origW, origH);
        long x0 = tapsFrom(decodedW, outW, cropOffset(outW, crop));
        long x1 = tapsTo(decodedW, outW, cropOffset(outW, crop) + crop);
        long y0 = tapsFrom(decodedH, outH, cropOffset(outH, crop));
        long y1 = tapsTo(decodedH, outH, cropOffset(outH, crop) + crop);
        int left = (int) (x0 * origW / decodedW);
        int top = (int) (y0 * origH / decodedH);
        int right = (int) Math.min(origW, (x1 * origW + decodedW - 1) / decodedW);
        int bottom = (int) Math.min(origH, (y1 * origH + decodedH - 1) / decodedH);
        box.set(left, top, right - left, bottom - top, false);
    }

    /** The first decoded pixel that output {@code first} of {@code out} reads, less one, from 0. */
    private long tapsFrom(int decoded, int out, int first) {
        double scale = (double) decoded / out;
        double reach = Math.max(scale, 1.0) * support;
        return Math.max(0, (long) ((first + 0.5) * scale - reach + 0.5) - 1);
    }

    /** One past the last decoded pixel that output {@code end - 1} of {@code out} reads, plus one, to {@code decoded}. */
    private long tapsTo(int decoded, int out, int end) {
        double scale = (double) decoded / out;
        double reach = Math.max(scale, 1.0) * support;
        return Math.min(decoded, (long) ((end - 0.5) * scale + reach + 0.5) + 1);
    }

    /** Whether a resize to the image's own size is skipped (tests turn it off to compare with the filter). */
    boolean identity = true;

    /** The {@code crop x crop} pixels from {@code (left, top)} of the decoded image, as one sample at {@code dst[offset]}. */
    private void copyCrop(DecodedImage image, int decodedLeft, int decodedTop, MemorySegment dst, long offset) {
        copyCrop(image, decodedLeft, decodedTop, dst, offset, false);
    }

    private void copyCrop(
            DecodedImage image, int decodedLeft, int decodedTop, MemorySegment dst, long offset, boolean rgb) {
        MemorySegment src = image.pixels();
        int srcW = image.width();
        int srcH = image.height();
        int left = decodedLeft - image.x();
        int top = decodedTop - image.y();
        if (left < 0 || top < 0 || left + crop > srcW || top + crop > srcH) {
            throw new IndexOutOfBoundsException("crop at " + left + "," + top + " outside " + srcW + "x" + srcH);
        }
        kernels.store(
                src, 4L * ((long) top * srcW + left), 4L * srcW, 4, crop, crop, rgb ? null : floatTable(), dst, offset);
    }

    /**
     * The training transform's pixels: the part of the original image that {@code box} names,
     * resized to {@code crop x crop} and mirrored when {@code box.flip}, written at
     * {@code dst[offset]}. With the image decoded at full size this is torchvision's
     * {@code hflip(F.resized_crop(img, top, left, h, w, crop))} on PIL exactly: PIL crops, then
     * resizes the crop, so the filter never reaches past the box. A flip costs nothing: the
     * coefficient rows are taken in the mirrored order.
     */
    public void resizedCrop(
            MemorySegment src, int srcW, int srcH, int origW, int origH, CropBox box, MemorySegment dst, long offset) {
        resizedCrop(whole.whole(src, srcW, srcH, origW, origH), box, dst, offset);
    }

    /**
     * {@link #resizedCrop(MemorySegment, int, int, int, int, CropBox, MemorySegment, long)} from what
     * a decoder holds, possibly a region of the decoded image (see {@link io.stoke.loader.decode.JpegDecoder#decodeBox}); the
     * box's pixels must all be in it.
     */
    public void resizedCrop(DecodedImage src, CropBox box, MemorySegment dst, long offset) {
        resizedCrop(src, box, dst, offset, false);
    }

    /**
     * {@link #resizedCrop(DecodedImage, CropBox, MemorySegment, long)} as uint8 RGB, 3 bytes a pixel,
     * whatever this resampler's output type: the crop an augmentation then works on, before
     * {@link #writeRgb} stores it.
     */
    public void resizedCropRgb(DecodedImage src, CropBox box, MemorySegment dst, long offset) {
        resizedCrop(src, box, dst, offset, true);
    }

    private void resizedCrop(DecodedImage src, CropBox box, MemorySegment dst, long offset, boolean rgb) {
        int origW = src.originalWidth();
        int origH = src.originalHeight();
        box.checkInside(origW, origH);
        if (identity
                && !box.flip
                && box.width == crop
                && box.height == crop
                && src.decodedWidth() == origW
                && src.decodedHeight() == origH) {
            copyCrop(src, box.left, box.top, dst, offset, rgb); // a resize of scale 1
            return;
        }
        plan.box(box.left, box.width, box.top, box.height)
                .output(crop, crop)
                .window(0, 0, crop, crop)
                .flip(box.flip)
                .rgb(rgb);
        run(src, dst, offset);
    }

    /**
     * What one resize computes, set by its caller just before {@link #run}: the box
     * {@code [x0, x0 + boxWidth) x [y0, y0 + boxHeight)} of the original image, resized to
     * {@code outWidth x outHeight}, of which the {@code cols x rows} pixels from {@code (left, top)}
     * are written, mirrored when {@code flip}, as uint8 RGB when {@code rgb}, else in the spec's
     * output type. One per resampler, re-set for every image.
     */
    private static final class Plan {
        int x0;
        int boxWidth;
        int y0;
        int boxHeight;
        int outWidth;
        int outHeight;
        int left;
        int top;
        int cols;
        int rows;
        boolean flip;
        boolean rgb;

        Plan box(int x0, int width, int y0, int height) {
            this.x0 = x0;
            this.boxWidth = width;
            this.y0 = y0;
            this.boxHeight = height;
            return this;
        }

        Plan output(int width, int height) {
            this.outWidth = width;
            this.outHeight = height;
            return this;
        }

        Plan window(int left, int top, int cols, int rows) {
            this.left = left;
            this.top = top;
            this.cols = cols;
            this.rows = rows;
            return this;
        }

        Plan flip(boolean flip) {
            this.flip = flip;
            return this;
        }

        Plan rgb(boolean rgb) {
            this.rgb = rgb;
            return this;
        }
    }

    /** Runs {@link #plan} over {@code image}, writing at {@code dst[offset]}. */
    private void run(DecodedImage image, MemorySegment dst, long offset) {
        MemorySegment src = image.pixels();
        int srcW = image.width();
        int srcH = image.height();
        Plan p = plan;
        int cols = p.cols;
        int rowsOut = p.rows;
        boolean rgb = p.rgb;
        if ((long) srcW * srcH * 4 > src.byteSize()) {
            throw new IndexOutOfBoundsException("source smaller than " + srcW + "x" + srcH);
        }
        long outBytes = rgb ? 3L * cols * rowsOut : spec.sampleBytes();
        if (offset < 0 || offset + outBytes > dst.byteSize()) {
            throw new IndexOutOfBoundsException("sample at " + offset + " does not fit in " + dst.byteSize());
        }
        coefficients(image);
        long rowBytes = 4L * cols;
        if (args.tmp.byteSize() < args.rows * rowBytes + SLACK) {
            Arena next = Arena.ofConfined();
            MemorySegment bigger = next.allocate(args.rows * rowBytes + SLACK, 64);
            tmpArena.close();
            tmpArena = next;
            args.tmp = bigger;
        }
        args.src = src;
        args.srcRowBytes = 4L * srcW;
        args.width = cols;
        args.outRows = rowsOut;
        args.table = rgb ? null : floatTable();
        args.dst = dst;
        args.offset = offset;
        kernels.horizontal(args);
        kernels.vertical(args);
    }

    /**
     * The coefficients of {@link #plan} over {@code image} into {@link #args} (computed again only
     * where an axis's differ from the last image's), each tap checked to lie inside the pixels the
     * image holds, and the source rows the horizontal pass reads ({@code yFirst}, {@code rows}).
     */
    private void coefficients(DecodedImage image) {
        Plan p = plan;
        int cols = p.cols;
        int rowsOut = p.rows;
        ensureOutputs(cols, rowsOut);
        if (hKey.differs(
                p.x0,
                p.boxWidth,
                image.originalWidth(),
                image.decodedWidth(),
                image.x(),
                p.outWidth,
                p.left,
                cols,
                p.flip)) {
            args.hTaps = coefficients(hKey, p.outWidth, p.left, cols, p.flip, args.hBounds, true);
            args.hVersion++;
        }
        if (vKey.differs(
                p.y0,
                p.boxHeight,
                image.originalHeight(),
                image.decodedHeight(),
                image.y(),
                p.outHeight,
                p.top,
                rowsOut,
                false)) {
            args.vTaps = coefficients(vKey, p.outHeight, p.top, rowsOut, false, args.vBounds, false);
        }
        checkInside(args.hBounds, cols, image.width(), "columns");
        checkInside(args.vBounds, rowsOut, image.height(), "rows");
        int yFirst = args.vBounds[0];
        int yLast = yFirst;
        for (int y = 0; y < rowsOut; y++) {
            yLast = Math.max(yLast, args.vBounds[2 * y] + args.vBounds[2 * y + 1]);
        }
        args.yFirst = yFirst;
        args.rows = yLast - yFirst;
    }

    /**
     * The evaluation transform's coefficients ({@link #resizeCenterCrop}) for an image of
     * {@code origW x origH} decoded whole at full size, into {@code out}: what a device applies to
     * reproduce this resampler's bytes from the same decoded pixels (the GPU decode's resize).
     */
    public void evalTables(int origW, int origH, ResampleTables out) {
        int outW = evalWidth(origW, origH);
        int outH = evalHeight(origW, origH);
        plan.box(0, origW, 0, origH)
                .output(outW, outH)
                .window(cropOffset(outW, crop), cropOffset(outH, crop), crop, crop)
                .flip(false)
                .rgb(false);
        tables(origW, origH, out);
    }

    /**
     * The training transform's coefficients ({@link #resizedCrop}: {@code box} resized to the crop,
     * mirrored when {@code box.flip}) for an image of {@code origW x origH} decoded whole at full
     * size, into {@code out}.
     */
    public void cropTables(int origW, int origH, CropBox box, ResampleTables out) {
        box.checkInside(origW, origH);
        plan.box(box.left, box.width, box.top, box.height)
                .output(crop, crop)
                .window(0, 0, crop, crop)
                .flip(box.flip)
                .rgb(false);
        tables(origW, origH, out);
    }

    private void tables(int w, int h, ResampleTables out) {
        // Only the sizes are read: the coefficients need no pixels.
        coefficients(whole.whole(MemorySegment.NULL, w, h, w, h));
        out.set(args, plan.cols, plan.rows);
    }

    /**
     * Room for the coefficients and scratch of {@code cols x rowsOut} outputs: the square crop
     * fits from the start; a larger plain resize grows the arrays once per new maximum (the
     * coefficient keys then differ, so nothing stale is reused).
     */
    private void ensureOutputs(int cols, int rowsOut) {
        if (args.hBounds.length < 2 * cols) {
            args.hBounds = new int[2 * cols];
            args.acc = new int[4 * cols];
        }
        if (args.vBounds.length < 2 * rowsOut) {
            args.vBounds = new int[2 * rowsOut];
        }
    }

    /** Each of the first {@code count} outputs' taps lie inside the {@code size} pixels the source holds on this axis. */
    private static void checkInside(int[] bounds, int count, int size, String what) {
        for (int i = 0; i < count; i++) {
            if (bounds[2 * i] < 0 || bounds[2 * i] + bounds[2 * i + 1] > size) {
                throw new IndexOutOfBoundsException("output " + i + " needs source " + what + " " + bounds[2 * i] + "+"
                        + bounds[2 * i + 1] + ", the source holds " + size);
            }
        }
    }

    /**
     * One axis of a resize: the box {@code [start, start + length)} of an original of {@code full}
     * pixels, in a decoded image of {@code decoded} pixels (fewer after DCT scaling) of which the
     * source holds those from {@code origin} on (a decoded region), to
     * {@code out} pixels, from output position {@code first}, mirrored or not. Kept to reuse the
     * coefficients while they stay the same (most images of a dataset share a size); {@code count}
     * is how many output positions they cover.
     */
    private static final class AxisKey {
        private int start = -1;
        private int length;
        private int full;
        private int decoded;
        private int origin;
        private int out;
        private int first;
        private int count;
        private boolean flip;

        /** Whether these differ from the ones held; when they do, they are held from now on. */
        boolean differs(
                int start, int length, int full, int decoded, int origin, int out, int first, int count, boolean flip) {
            if (start == this.start
                    && length == this.length
                    && full == this.full
                    && decoded == this.decoded
                    && origin == this.origin
                    && out == this.out
                    && first == this.first
                    && count == this.count
                    && flip == this.flip) {
                return false;
            }
            this.start = start;
            this.length = length;
            this.full = full;
            this.decoded = decoded;
            this.origin = origin;
            this.out = out;
            this.first = first;
            this.count = count;
            this.flip = flip;
            return true;
        }

        /** The box's first edge in decoded pixels (exact: one product, one division). */
        double in0() {
            return (double) start * decoded / full;
        }

        double in1() {
            return (double) (start + length) * decoded / full;
        }
    }

    /**
     * PIL's {@code precompute_coeffs} for the output positions {@code [first, first + count)} of a
     * resize of the box in {@code key} to {@code outSize}, then {@code normalize_coeffs_8bpc}. As
     * PIL does after a crop, positions are relative to the box's first whole pixel and the filter
     * is clipped to the box; with no DCT scaling the box's edges are whole pixels and this is PIL's
     * crop-then-resize exactly (for the whole image, its plain resize). Mirrored, output {@code i}
     * gets position {@code first + count - 1 - i}'s coefficients.
     *
     * @return the number of taps per output position (the stride of the weights array)
     */
    private int coefficients(
            AxisKey key, int outSize, int first, int count, boolean flip, int[] bounds, boolean horizontal) {
        if (interpolation == TransformSpec.Interpolation.NEAREST) {
            return nearest(key, outSize, first, count, flip, bounds, horizontal);
        }
        boolean cubic = interpolation == TransformSpec.Interpolation.BICUBIC;
        double in0 = key.in0();
        double in1 = key.in1();
        int lo = (int) Math.floor(in0);
        int hi = Math.min(key.decoded, (int) Math.ceil(in1));
        int inSize = hi - lo;
        double shift = in0 - lo;
        double scale = (in1 - in0) / outSize;
        double filterScale = Math.max(scale, 1.0);
        double support = this.support * filterScale;
        int taps = (int) Math.ceil(support) * 2 + 1;
        int[] weights = weights(count * taps, horizontal);
        if (filterValues.length < taps) {
            filterValues = new double[taps];
        }
        double[] k = filterValues;
        double ss = 1.0 / filterScale;
        for (int i = 0; i < count; i++) {
            int xx = first + (flip ? count - 1 - i : i);
            double center = shift + (xx + 0.5) * scale;
            int xmin = (int) (center - support + 0.5);
            if (xmin < 0) {
                xmin = 0;
            }
            int xmax = (int) (center + support + 0.5);
            if (xmax > inSize) {
                xmax = inSize;
            }
            xmax -= xmin;
            // Each tap's filter value once, as PIL keeps it in k[] (the same doubles, summed in order).
            double total = 0;
            for (int x = 0; x < xmax; x++) {
                double w = cubic ? bicubic((x + xmin - center + 0.5) * ss) : triangle((x + xmin - center + 0.5) * ss);
                k[x] = w;
                total += w;
            }
            int base = i * taps;
            for (int x = 0; x < taps; x++) {
                double w = x < xmax ? k[x] : 0;
                if (total != 0.0) {
                    w /= total;
                }
                weights[base + x] =
                        w < 0 ? (int) (-0.5 + w * (1 << PRECISION_BITS)) : (int) (0.5 + w * (1 << PRECISION_BITS));
            }
            bounds[2 * i] = lo - key.origin + xmin;
            bounds[2 * i + 1] = xmax;
        }
        return taps;
    }

    /** The weights array of one axis, with room for {@code n} weights. */
    private int[] weights(int n, boolean horizontal) {
        int[] weights = horizontal ? args.hWeights : args.vWeights;
        if (weights.length < n) {
            weights = new int[n];
            if (horizontal) {
                args.hWeights = weights;
            } else {
                args.vWeights = weights;
            }
        }
        return weights;
    }

    /**
     * PIL's nearest-neighbour resize of the box in {@code key} to {@code outSize} ({@code _resize}
     * hands it to {@code ImagingScaleAffine}, after torchvision's crop a box from 0): output
     * {@code xx} takes source pixel {@code (int) xo}, where {@code xo} starts at half a step and
     * grows by the step {@code length / outSize} once per output. PIL adds the step rather than
     * multiplying by it, and the sum's rounding picks the pixel where a position falls on an
     * edge, so the sum is repeated here the same way. Each output is one tap of weight 1, which
     * the filter passes turn into the pixel itself, exactly.
     */
    private int nearest(
            AxisKey key, int outSize, int first, int count, boolean flip, int[] bounds, boolean horizontal) {
        double in0 = key.in0();
        double in1 = key.in1();
        int lo = (int) Math.floor(in0);
        int hi = Math.min(key.decoded, (int) Math.ceil(in1));
        double step = (in1 - in0) / outSize;
        int[] weights = weights(count, horizontal);
        double xo = (in0 - lo) + step * 0.5;
        for (int xx = 0; xx < first + count; xx++, xo += step) {
            if (xx < first) {
                continue;
            }
            // Within [0, hi - lo) for any box: the last position is half a step inside its edge.
            int xin = Math.clamp(xo < 0.0 ? 0 : (int) xo, 0, hi - lo - 1);
            int i = flip ? first + count - 1 - xx : xx - first;
            weights[i] = 1 << PRECISION_BITS;
            bounds[2 * i] = lo - key.origin + xin;
            bounds[2 * i + 1] = 1;
        }
        return 1;
    }

    private static double triangle(double x) {
        if (x < 0) {
            x = -x;
        }
        return x < 1.0 ? 1.0 - x : 0.0;
    }

    /** PIL's {@code bicubic_filter}: cubic convolution with a = -0.5, written as PIL writes it (the same doubles). */
    private static double bicubic(double x) {
        final double a = -0.5;
        if (x < 0.0) {
            x = -x;
        }
        if (x < 1.0) {
            return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
        }
        if (x < 2.0) {
            return (((x - 5) * x + 8) * x - 4) * a;
        }
        return 0.0;
    }

    @Override
    public void close() {
        tmpArena.close();
    }
}
