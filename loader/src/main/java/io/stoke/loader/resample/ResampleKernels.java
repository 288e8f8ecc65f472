package io.stoke.loader.resample;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;

import io.stoke.ffm.StokePixels;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

/**
 * The two inner loops of {@link Resampler}, over 4-byte RGBX pixels and PIL's 22-bit fixed-point
 * weights. Two implementations compute identical bytes: {@link NativeKernels} (Stoke's C library)
 * and {@link ScalarKernels} (the fallback, and the oracle the C kernels are tested against).
 */
interface ResampleKernels {
    int PRECISION_BITS = 32 - 8 - 2;
    int HALF = 1 << (PRECISION_BITS - 1);

    /**
     * Horizontal pass: for each of {@code a.rows} source rows from {@code a.yFirst}, each of
     * {@code a.width} output pixels {@code x} is the sum over {@code t < hBounds[2x+1]} of source
     * pixel {@code hBounds[2x] + t} times {@code hWeights[x * hTaps + t]}, rounded to 8 bits, written
     * to {@code a.tmp} as RGBX rows of {@code 4 * width} bytes. {@code a.hVersion} changes whenever
     * the horizontal coefficients do, so kernels may keep what they derive from them.
     */
    void horizontal(KernelArguments a);

    /**
     * Writes {@code pixels} RGB pixels at {@code dst[offset]}: channel c of pixel x is
     * {@code clip8(acc[4x + c])} ({@code acc >> 22} clamped to [0, 255]); X is dropped.
     */
    void storeRgb(int[] acc, int pixels, MemorySegment dst, long offset);

    /** {@code acc[i] += tmp[row + i] * k} for {@code i < width}. */
    void accumulate(MemorySegment tmp, long row, int width, int k, int[] acc);

    /**
     * Stores an image without resizing it: the {@code width x rows} pixels of {@code src} from
     * {@code srcOffset}, rows {@code srcRowBytes} apart, {@code pixelBytes} (3: RGB, or 4: RGBX) a
     * pixel, written at {@code dst[offset]} as RGB rows end to end when {@code table} is null, else
     * as channels-first float32 where value {@code v} of channel {@code c} becomes
     * {@code table[256 * c + v]}. Every extent is checked first ({@link #checkStore}).
     */
    default void store(
            MemorySegment src,
            long srcOffset,
            long srcRowBytes,
            int pixelBytes,
            int width,
            int rows,
            float[] table,
            MemorySegment dst,
            long offset) {
        checkStore(src, srcOffset, srcRowBytes, pixelBytes, width, rows, table, dst, offset);
        if (table == null && pixelBytes == 3 && srcRowBytes == 3L * width) {
            MemorySegment.copy(src, srcOffset, dst, offset, 3L * width * rows);
            return;
        }
        long plane = 4L * width * rows;
        for (int y = 0; y < rows; y++) {
            long in = srcOffset + y * srcRowBytes;
            if (table == null) {
                long out = offset + 3L * width * y;
                for (int x = 0; x < width; x++, in += pixelBytes, out += 3) {
                    dst.set(JAVA_BYTE, out, src.get(JAVA_BYTE, in));
                    dst.set(JAVA_BYTE, out + 1, src.get(JAVA_BYTE, in + 1));
                    dst.set(JAVA_BYTE, out + 2, src.get(JAVA_BYTE, in + 2));
                }
            } else {
                long out = offset + 4L * width * y;
                for (int x = 0; x < width; x++, in += pixelBytes, out += 4) {
                    dst.set(JAVA_FLOAT_UNALIGNED, out, table[src.get(JAVA_BYTE, in) & 0xFF]);
                    dst.set(JAVA_FLOAT_UNALIGNED, out + plane, table[256 + (src.get(JAVA_BYTE, in + 1) & 0xFF)]);
                    dst.set(JAVA_FLOAT_UNALIGNED, out + 2 * plane, table[512 + (src.get(JAVA_BYTE, in + 2) & 0xFF)]);
                }
            }
        }
    }

    /** Everything {@link #store} reads and writes lies inside {@code src} and {@code dst}. */
    static void checkStore(
            MemorySegment src,
            long srcOffset,
            long srcRowBytes,
            int pixelBytes,
            int width,
            int rows,
            float[] table,
            MemorySegment dst,
            long offset) {
        if ((pixelBytes != 3 && pixelBytes != 4) || width < 1 || rows < 1 || srcRowBytes < (long) pixelBytes * width) {
            throw new IllegalArgumentException(
                    width + "x" + rows + " pixels of " + pixelBytes + " bytes in rows of " + srcRowBytes);
        }
        Objects.checkFromIndexSize(srcOffset, (rows - 1) * srcRowBytes + (long) pixelBytes * width, src.byteSize());
        long outBytes = (table == null ? 3L : 12L) * width * rows;
        Objects.checkFromIndexSize(offset, outBytes, dst.byteSize());
        if (table != null && table.length < 3 * 256) {
            throw new IndexOutOfBoundsException("normalisation table of " + table.length + " values");
        }
    }

    /**
     * Vertical pass: output row {@code y < a.outRows} accumulates, from {@link #HALF}, intermediate
     * rows {@code vBounds[2y] - yFirst + t} ({@code t < vBounds[2y+1]}, each of {@code 4 * width}
     * bytes of {@code a.tmp}) times {@code vWeights[y * vTaps + t]} into {@code a.acc}, then writes
     * its {@code width} pixels: RGB bytes at {@code dst[offset + 3 * width * y]} when {@code a.table}
     * is null, else normalised float32, channels first, where each 8-bit result {@code v} of channel
     * {@code c} becomes {@code table[256 * c + v]}, at byte
     * {@code offset + 4 * (c * width * outRows + width * y + x)}.
     */
    default void vertical(KernelArguments a) {
        MemorySegment tmp = a.tmp;
        int width = a.width;
        int outRows = a.outRows;
        int yFirst = a.yFirst;
        int[] bounds = a.vBounds;
        int[] weights = a.vWeights;
        int taps = a.vTaps;
        int[] acc = a.acc;
        float[] table = a.table;
        MemorySegment dst = a.dst;
        long offset = a.offset;
        int n = 4 * width;
        long plane = 4L * width * outRows;
        for (int y = 0; y < outRows; y++) {
            Arrays.fill(acc, 0, n, HALF);
            int ymin = bounds[2 * y] - yFirst;
            for (int t = 0; t < bounds[2 * y + 1]; t++) {
                accumulate(tmp, (long) (ymin + t) * n, n, weights[y * taps + t], acc);
            }
            if (table == null) {
                storeRgb(acc, width, dst, offset + 3L * width * y);
                continue;
            }
            long o = offset + 4L * width * y;
            for (int x = 0; x < width; x++) {
                dst.set(JAVA_FLOAT, o, table[ScalarKernels.clip8(acc[4 * x]) & 0xFF]);
                dst.set(JAVA_FLOAT, o + plane, table[256 + (ScalarKernels.clip8(acc[4 * x + 1]) & 0xFF)]);
                dst.set(JAVA_FLOAT, o + 2 * plane, table[512 + (ScalarKernels.clip8(acc[4 * x + 2]) & 0xFF)]);
                o += 4;
            }
        }
    }

    /**
     * A new set of kernels (they keep per-thread scratch): Stoke's C library when it loads, else
     * plain Java, which computes the same bytes more slowly (docs/design.md, "The native pixel
     * library") and is said once, loudly, on standard error.
     */
    static ResampleKernels best() {
        return KernelChoice.NATIVE ? new NativeKernels() : new ScalarKernels();
    }

    /** Resolved once; a missing C library is said once, loudly, on standard error. */
    final class KernelChoice {
        static final boolean NATIVE = nativeLoads();

        private KernelChoice() {}

        private static boolean nativeLoads() {
            if (StokePixels.available()) {
                return true;
            }
            System.err.println("stoke: WARNING: " + StokePixels.unavailableReason()
                    + "; resizing in Java instead (about 3x slower, and slower still until the JIT compiles it).");
            return false;
        }
    }
}
