package io.stoke.loader.transform;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels with the Vector API. Horizontal: one RGBX pixel is one 4-lane int vector, so each
 * tap is a load, a widening, a multiply and an add for all channels at once. Vertical: 16 bytes
 * of a row at a time, widened to 16 ints.
 */
final class VectorKernels implements ResampleKernels {
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    private static final VectorSpecies<Byte> PIXEL_BYTES = ByteVector.SPECIES_64;   // 2 pixels, lanes 0-3 used
    private static final VectorSpecies<Integer> PIXEL = IntVector.SPECIES_128;      // R, G, B, X
    private static final VectorSpecies<Byte> ROW_BYTES = ByteVector.SPECIES_128;
    private static final VectorSpecies<Integer> ROW_INTS = IntVector.SPECIES_512;

    private static final VectorSpecies<Byte> QUAD_BYTES = ByteVector.SPECIES_128;   // 4 RGBX pixels
    private static final VectorSpecies<Integer> QUAD = IntVector.SPECIES_512;        // their 16 channels
    private static final VectorShuffle<Integer> DOWN_8 = VectorShuffle.fromOp(QUAD, i -> (i + 8) & 15);
    private static final VectorShuffle<Integer> DOWN_4 = VectorShuffle.fromOp(QUAD, i -> (i + 4) & 15);
    private static final int QUAD_TAPS = 4;

    /** Per output pixel, its up-to-4 weights each repeated over R, G, B, X: lane 4t+c = w[t]. */
    private int[] wide = new int[0];
    private long wideVersion = -1;

    @Override
    public void horizontal(MemorySegment src, long srcRowBytes, int yFirst, int rows, int outWidth,
                           int[] bounds, int[] weights, int taps, long weightsVersion, MemorySegment tmp) {
        if (weightsVersion != wideVersion || wide.length < outWidth * 16) {
            expand(outWidth, bounds, weights, taps);
            wideVersion = weightsVersion;
        }
        horizontalPass(src, srcRowBytes, yFirst, rows, outWidth, bounds, weights, taps, tmp);
    }

    private void expand(int outWidth, int[] bounds, int[] weights, int taps) {
        if (wide.length < outWidth * 16) {
            wide = new int[outWidth * 16];
        }
        for (int x = 0; x < outWidth; x++) {
            int n = Math.min(bounds[2 * x + 1], QUAD_TAPS);
            for (int t = 0; t < QUAD_TAPS; t++) {
                int w = t < n ? weights[x * taps + t] : 0;
                for (int c = 0; c < 4; c++) {
                    wide[16 * x + 4 * t + c] = w;
                }
            }
        }
    }

    private void horizontalPass(MemorySegment src, long srcRowBytes, int yFirst, int rows, int outWidth,
                                int[] bounds, int[] weights, int taps, MemorySegment tmp) {
        long tmpRow = 4L * outWidth;
        long quadLimit = src.byteSize() - QUAD_BYTES.vectorByteSize();
        long pixelLimit = src.byteSize() - PIXEL_BYTES.vectorByteSize();
        IntVector half = IntVector.broadcast(PIXEL, HALF);
        IntVector zero = IntVector.zero(PIXEL);
        IntVector max = IntVector.broadcast(PIXEL, 255);
        for (int r = 0; r < rows; r++) {
            long in = (yFirst + r) * srcRowBytes;
            long o = r * tmpRow;
            for (int x = 0; x < outWidth; x++) {
                int n = bounds[2 * x + 1];
                long p = in + 4L * bounds[2 * x];
                IntVector acc;
                if (n <= QUAD_TAPS && p <= quadLimit) {
                    // All taps in one load; zero weights cancel the pixels past the last tap.
                    IntVector px = (IntVector) ByteVector.fromMemorySegment(QUAD_BYTES, src, p, ORDER)
                            .convertShape(VectorOperators.ZERO_EXTEND_B2I, QUAD, 0);
                    IntVector sum = px.mul(IntVector.fromArray(QUAD, wide, 16 * x));
                    sum = sum.add(sum.rearrange(DOWN_8));
                    sum = sum.add(sum.rearrange(DOWN_4));
                    acc = half.add((IntVector) sum.reinterpretShape(PIXEL, 0));
                } else if (p + 4L * (n - 1) <= pixelLimit) {
                    int kb = x * taps;
                    acc = half;
                    for (int t = 0; t < n; t++) {
                        IntVector px = (IntVector) ByteVector.fromMemorySegment(PIXEL_BYTES, src, p, ORDER)
                                .convertShape(VectorOperators.ZERO_EXTEND_B2I, PIXEL, 0);
                        acc = acc.add(px.mul(weights[kb + t]));
                        p += 4;
                    }
                } else {
                    acc = edgePixel(src, p, n, weights, x * taps);
                }
                IntVector clipped = acc.lanewise(VectorOperators.ASHR, PRECISION_BITS).max(zero).min(max);
                ByteVector bytes = (ByteVector) clipped.convertShape(VectorOperators.I2B, PIXEL_BYTES, 0);
                if (o + PIXEL_BYTES.vectorByteSize() <= tmp.byteSize()) {
                    // Writes 8 bytes; the 4 past this pixel are overwritten by the next one.
                    bytes.intoMemorySegment(tmp, o, ORDER);
                } else {
                    bytes.intoMemorySegment(tmp, o, ORDER, PIXEL_BYTES.indexInRange(0, 4));
                }
                o += 4;
            }
        }
    }

    /** The image's last pixels, where a vector load would pass the segment's end: one byte at a time. */
    private static IntVector edgePixel(MemorySegment src, long p, int n, int[] weights, int kb) {
        int[] s = {HALF, HALF, HALF, HALF};
        for (int t = 0; t < n; t++) {
            for (int c = 0; c < 4; c++) {
                s[c] += (src.get(java.lang.foreign.ValueLayout.JAVA_BYTE, p + 4L * t + c) & 0xFF) * weights[kb + t];
            }
        }
        return IntVector.fromArray(PIXEL, s, 0);
    }

    private static final VectorSpecies<Byte> RGB_OUT = ByteVector.SPECIES_128;
    /**
     * Moves the R, G, B bytes of 4 RGBX pixels to the first 12 lanes: a fixed byte shuffle (one
     * pshufb), fast on every x86-64 with SSSE3, unlike a compress.
     */
    private static final VectorShuffle<Byte> DROP_X =
            VectorShuffle.fromValues(RGB_OUT, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 3, 7, 11, 15);
    /** The first 12 lanes: 4 pixels of RGB once compressed. */
    private static final jdk.incubator.vector.VectorMask<Byte> TWELVE = RGB_OUT.indexInRange(0, 12);

    @Override
    public void storeRgb(int[] acc, int pixels, MemorySegment dst, long offset) {
        IntVector zero = IntVector.zero(ROW_INTS);
        IntVector max = IntVector.broadcast(ROW_INTS, 255);
        long o = offset;
        int x = 0;
        long end = offset + 3L * pixels;
        for (; x + 4 <= pixels; x += 4) {
            ByteVector rgbx = (ByteVector) IntVector.fromArray(ROW_INTS, acc, 4 * x)
                    .lanewise(VectorOperators.ASHR, PRECISION_BITS).max(zero).min(max)
                    .convertShape(VectorOperators.I2B, RGB_OUT, 0);
            ByteVector rgb = rgbx.rearrange(DROP_X);
            if (o + RGB_OUT.vectorByteSize() <= end) {
                // 16 bytes written, 12 of them this pixel quad's: the next quad overwrites the rest.
                rgb.intoMemorySegment(dst, o, ORDER);
            } else {
                rgb.intoMemorySegment(dst, o, ORDER, TWELVE);
            }
            o += 12;
        }
        for (; x < pixels; x++) {
            dst.set(java.lang.foreign.ValueLayout.JAVA_BYTE, o, ScalarKernels.clip8(acc[4 * x]));
            dst.set(java.lang.foreign.ValueLayout.JAVA_BYTE, o + 1, ScalarKernels.clip8(acc[4 * x + 1]));
            dst.set(java.lang.foreign.ValueLayout.JAVA_BYTE, o + 2, ScalarKernels.clip8(acc[4 * x + 2]));
            o += 3;
        }
    }

    @Override
    public void accumulate(MemorySegment tmp, long row, int width, int k, int[] acc) {
        int i = 0;
        int step = ROW_INTS.length();
        int bound = width - step;
        for (; i <= bound; i += step) {
            IntVector v = (IntVector) ByteVector.fromMemorySegment(ROW_BYTES, tmp, row + i, ORDER)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, ROW_INTS, 0);
            IntVector.fromArray(ROW_INTS, acc, i).add(v.mul(k)).intoArray(acc, i);
        }
        for (; i < width; i++) {
            acc[i] += (tmp.get(java.lang.foreign.ValueLayout.JAVA_BYTE, row + i) & 0xFF) * k;
        }
    }
}
