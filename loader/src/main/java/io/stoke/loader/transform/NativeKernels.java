package io.stoke.loader.transform;

import io.stoke.ffm.StokePixels;
import java.lang.foreign.MemorySegment;

/**
 * The resize's two passes in Stoke's C library ({@code native/pixels}): compiled code from the
 * first image, where the Java kernels run interpreted until the JIT has compiled them. The same
 * bytes as {@link ScalarKernels} (tested). Every extent the C code reads or writes is checked
 * here first. One per {@link Resampler} (it keeps the heap segments over the coefficient arrays,
 * which change only when an array is replaced, so no call allocates).
 */
final class NativeKernels implements ResampleKernels {
    private final ScalarKernels java = new ScalarKernels();
    private final Views hBounds = new Views();
    private final Views hWeights = new Views();
    private final Views vBounds = new Views();
    private final Views vWeights = new Views();
    private final Views acc = new Views();
    private float[] tableArray;
    private MemorySegment tableSegment;

    /** A heap segment over the array it was last asked for. */
    private static final class Views {
        private int[] array;
        private MemorySegment segment;

        MemorySegment of(int[] a) {
            if (a != array) {
                array = a;
                segment = MemorySegment.ofArray(a);
            }
            return segment;
        }
    }

    @Override
    public void horizontal(
            MemorySegment src,
            long srcRowBytes,
            int yFirst,
            int rows,
            int outWidth,
            int[] bounds,
            int[] weights,
            int taps,
            long weightsVersion,
            MemorySegment tmp) {
        if (yFirst < 0 || rows < 0 || (yFirst + (long) rows) * srcRowBytes > src.byteSize()) {
            throw new IndexOutOfBoundsException(
                    "rows " + yFirst + "+" + rows + " of " + srcRowBytes + " bytes outside " + src.byteSize());
        }
        if ((long) rows * 4 * outWidth > tmp.byteSize()) {
            throw new IndexOutOfBoundsException(rows + " rows of " + outWidth + " pixels do not fit " + tmp.byteSize());
        }
        checkTaps(bounds, weights, outWidth, taps, srcRowBytes / 4);
        StokePixels.resampleHorizontal(
                src, srcRowBytes, yFirst, rows, outWidth, hBounds.of(bounds), hWeights.of(weights), taps, tmp);
    }

    @Override
    public void verticalRgb(
            MemorySegment tmp,
            int width,
            int yFirst,
            int outRows,
            int[] bounds,
            int[] weights,
            int taps,
            int[] acc,
            MemorySegment dst,
            long offset) {
        checkVertical(tmp, width, yFirst, outRows, bounds, weights, taps, acc, dst, offset, 3L * width * outRows);
        StokePixels.resampleVerticalRgb(
                tmp,
                width,
                yFirst,
                outRows,
                vBounds.of(bounds),
                vWeights.of(weights),
                taps,
                this.acc.of(acc),
                dst,
                offset);
    }

    @Override
    public void verticalFloat(
            MemorySegment tmp,
            int width,
            int yFirst,
            int outRows,
            int[] bounds,
            int[] weights,
            int taps,
            int[] acc,
            float[] table,
            MemorySegment dst,
            long offset) {
        checkVertical(tmp, width, yFirst, outRows, bounds, weights, taps, acc, dst, offset, 12L * width * outRows);
        if (table.length < 3 * 256) {
            throw new IndexOutOfBoundsException("normalisation table of " + table.length + " values");
        }
        StokePixels.resampleVerticalFloat(
                tmp,
                width,
                yFirst,
                outRows,
                vBounds.of(bounds),
                vWeights.of(weights),
                taps,
                this.acc.of(acc),
                table(table),
                dst,
                offset);
    }

    @Override
    public void store(
            MemorySegment src,
            long srcOffset,
            long srcRowBytes,
            int pixelBytes,
            int width,
            int rows,
            float[] table,
            MemorySegment dst,
            long offset) {
        ResampleKernels.checkStore(src, srcOffset, srcRowBytes, pixelBytes, width, rows, table, dst, offset);
        if (table == null) {
            StokePixels.storeRgb(src, srcOffset, srcRowBytes, pixelBytes, width, rows, dst, offset);
        } else {
            StokePixels.storeFloat(src, srcOffset, srcRowBytes, pixelBytes, width, rows, table(table), dst, offset);
        }
    }

    /** A heap segment over the normalisation table, made once per table. */
    private MemorySegment table(float[] table) {
        if (tableArray != table) {
            tableArray = table;
            tableSegment = MemorySegment.ofArray(table);
        }
        return tableSegment;
    }

    /** What a vertical pass reads (intermediate rows, scratch) and writes ({@code outBytes} at {@code offset}). */
    private static void checkVertical(
            MemorySegment tmp,
            int width,
            int yFirst,
            int outRows,
            int[] bounds,
            int[] weights,
            int taps,
            int[] acc,
            MemorySegment dst,
            long offset,
            long outBytes) {
        long rowBytes = 4L * width;
        checkTaps(bounds, weights, outRows, taps, Long.MAX_VALUE);
        for (int y = 0; y < outRows; y++) {
            long first = bounds[2 * y] - (long) yFirst;
            if (first < 0 || (first + bounds[2 * y + 1]) * rowBytes > tmp.byteSize()) {
                throw new IndexOutOfBoundsException(
                        "output row " + y + " reads intermediate rows outside " + tmp.byteSize());
            }
        }
        if (acc.length < 4 * width) {
            throw new IndexOutOfBoundsException("scratch of " + acc.length + " for " + width + " pixels");
        }
        if (offset < 0 || offset + outBytes > dst.byteSize()) {
            throw new IndexOutOfBoundsException(outBytes + " bytes at " + offset + " do not fit " + dst.byteSize());
        }
    }

    /** Every output's taps lie in [0, limit) and in the weights array. */
    private static void checkTaps(int[] bounds, int[] weights, int outputs, int taps, long limit) {
        if (bounds.length < 2L * outputs || weights.length < (long) outputs * taps) {
            throw new IndexOutOfBoundsException("coefficients for " + outputs + " outputs of " + taps + " taps");
        }
        for (int i = 0; i < outputs; i++) {
            int start = bounds[2 * i];
            int n = bounds[2 * i + 1];
            if (start < 0 || n < 0 || n > taps || start + (long) n > limit) {
                throw new IndexOutOfBoundsException("output " + i + " taps " + start + "+" + n + " outside " + limit);
            }
        }
    }

    @Override
    public void storeRgb(int[] acc, int pixels, MemorySegment dst, long offset) {
        java.storeRgb(acc, pixels, dst, offset);
    }

    @Override
    public void accumulate(MemorySegment tmp, long row, int width, int k, int[] acc) {
        java.accumulate(tmp, row, width, k, acc);
    }
}
