package io.stoke.loader.resample;

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
    public void horizontal(KernelArguments a) {
        checkHorizontal(a);
        StokePixels.resampleHorizontal(
                a.src,
                a.srcRowBytes,
                a.yFirst,
                a.rows,
                a.width,
                hBounds.of(a.hBounds),
                hWeights.of(a.hWeights),
                a.hTaps,
                a.tmp);
    }

    @Override
    public void vertical(KernelArguments a) {
        float[] table = a.table;
        checkVertical(a, (table == null ? 3L : 12L) * a.width * a.outRows);
        if (table == null) {
            StokePixels.resampleVerticalRgb(
                    a.tmp,
                    a.width,
                    a.yFirst,
                    a.outRows,
                    vBounds.of(a.vBounds),
                    vWeights.of(a.vWeights),
                    a.vTaps,
                    acc.of(a.acc),
                    a.dst,
                    a.offset);
            return;
        }
        if (table.length < 3 * 256) {
            throw new IndexOutOfBoundsException("normalisation table of " + table.length + " values");
        }
        StokePixels.resampleVerticalFloat(
                a.tmp,
                a.width,
                a.yFirst,
                a.outRows,
                vBounds.of(a.vBounds),
                vWeights.of(a.vWeights),
                a.vTaps,
                acc.of(a.acc),
                table(table),
                a.dst,
                a.offset);
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

    /** What a horizontal pass reads (source rows, coefficients) and writes (intermediate rows). */
    private static void checkHorizontal(KernelArguments a) {
        long rowBytes = a.srcRowBytes;
        long srcBytes = a.src.byteSize();
        if (a.yFirst < 0 || a.rows < 0 || (a.yFirst + (long) a.rows) * rowBytes > srcBytes) {
            throw new IndexOutOfBoundsException(
                    "rows " + a.yFirst + "+" + a.rows + " of " + rowBytes + " bytes outside " + srcBytes);
        }
        if ((long) a.rows * 4 * a.width > a.tmp.byteSize()) {
            throw new IndexOutOfBoundsException(
                    a.rows + " rows of " + a.width + " pixels do not fit " + a.tmp.byteSize());
        }
        checkTaps(a.hBounds, a.hWeights, a.width, a.hTaps, rowBytes / 4);
    }

    /** What a vertical pass reads (intermediate rows, scratch) and writes ({@code outBytes} at {@code offset}). */
    private static void checkVertical(KernelArguments a, long outBytes) {
        MemorySegment tmp = a.tmp;
        int[] bounds = a.vBounds;
        int outRows = a.outRows;
        long rowBytes = 4L * a.width;
        checkTaps(bounds, a.vWeights, outRows, a.vTaps, Long.MAX_VALUE);
        for (int y = 0; y < outRows; y++) {
            long first = bounds[2 * y] - (long) a.yFirst;
            if (first < 0 || (first + bounds[2 * y + 1]) * rowBytes > tmp.byteSize()) {
                throw new IndexOutOfBoundsException(
                        "output row " + y + " reads intermediate rows outside " + tmp.byteSize());
            }
        }
        if (a.acc.length < 4 * a.width) {
            throw new IndexOutOfBoundsException("scratch of " + a.acc.length + " for " + a.width + " pixels");
        }
        if (a.offset < 0 || a.offset + outBytes > a.dst.byteSize()) {
            throw new IndexOutOfBoundsException(outBytes + " bytes at " + a.offset + " do not fit " + a.dst.byteSize());
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
