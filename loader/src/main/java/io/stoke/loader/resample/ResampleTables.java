package io.stoke.loader.resample;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One resize's coefficients, as {@link Resampler#evalTables} and {@link Resampler#cropTables} give
 * them: what another executor of Stoke's two passes (the GPU decode's kernels) needs to write the
 * same bytes from the same decoded pixels. PIL's 22-bit fixed-point weights; the horizontal pass
 * reads source rows {@code [yFirst, yFirst + rows)} and writes {@link #cols()} pixels a row, each
 * rounded to 8 bits; the vertical pass writes {@link #outRows()} rows from those. Output {@code i}
 * of an axis reads {@code bounds[2i + 1]} taps from source pixel (or intermediate row)
 * {@code bounds[2i]}, weighted by {@code weights[i * taps + t]}.
 *
 * <p>A flyweight its owner re-fills per image; the arrays grow once per new maximum.
 */
public final class ResampleTables {
    private int cols;
    private int outRows;
    private int yFirst;
    private int rows;
    private int hTaps;
    private int vTaps;
    private int[] hBounds = new int[0];
    private int[] hWeights = new int[0];
    private int[] vBounds = new int[0];
    private int[] vWeights = new int[0];

    void set(KernelArguments a, int cols, int outRows) {
        this.cols = cols;
        this.outRows = outRows;
        this.yFirst = a.yFirst;
        this.rows = a.rows;
        this.hTaps = a.hTaps;
        this.vTaps = a.vTaps;
        hBounds = copy(a.hBounds, 2 * cols, hBounds);
        hWeights = copy(a.hWeights, cols * hTaps, hWeights);
        vBounds = copy(a.vBounds, 2 * outRows, vBounds);
        vWeights = copy(a.vWeights, outRows * vTaps, vWeights);
    }

    private static int[] copy(int[] from, int n, int[] into) {
        int[] to = into.length >= n ? into : new int[n];
        System.arraycopy(from, 0, to, 0, n);
        return to;
    }

    /** Output pixels a row. */
    public int cols() {
        return cols;
    }

    /** Output rows. */
    public int outRows() {
        return outRows;
    }

    /** The first source row the horizontal pass reads. */
    public int yFirst() {
        return yFirst;
    }

    /** Source rows the horizontal pass reads, so intermediate rows the vertical pass reads. */
    public int rows() {
        return rows;
    }

    public int hTaps() {
        return hTaps;
    }

    public int vTaps() {
        return vTaps;
    }

    /** One past the last source column any output reads (the horizontal taps' reach). */
    public int columnsRead() {
        int reach = 0;
        for (int x = 0; x < cols; x++) {
            reach = Math.max(reach, hBounds[2 * x] + hBounds[2 * x + 1]);
        }
        return reach;
    }

    /** Ints {@link #writeTo} writes: the horizontal bounds and weights, then the vertical ones. */
    public int ints() {
        return 2 * cols + cols * hTaps + 2 * outRows + outRows * vTaps;
    }

    /** Where the vertical tables start, in ints from the horizontal ones' start. */
    public int verticalOffset() {
        return 2 * cols + cols * hTaps;
    }

    /**
     * Writes {@link #ints()} ints at {@code dst[offset]} (native order): horizontal bounds
     * ({@code 2 * cols}), horizontal weights ({@code cols * hTaps}), vertical bounds
     * ({@code 2 * outRows}), vertical weights ({@code outRows * vTaps}).
     */
    public void writeTo(MemorySegment dst, long offset) {
        Objects.checkFromIndexSize(offset, 4L * ints(), dst.byteSize());
        long o = offset;
        o = put(dst, o, hBounds, 2 * cols);
        o = put(dst, o, hWeights, cols * hTaps);
        o = put(dst, o, vBounds, 2 * outRows);
        put(dst, o, vWeights, outRows * vTaps);
    }

    private static long put(MemorySegment dst, long offset, int[] values, int n) {
        MemorySegment.copy(values, 0, dst, JAVA_INT, offset, n);
        return offset + 4L * n;
    }
}
