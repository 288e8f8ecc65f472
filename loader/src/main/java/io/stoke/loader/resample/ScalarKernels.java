package io.stoke.loader.resample;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.MemorySegment;

/** Plain loops: the fallback, and the reference that {@link NativeKernels} must match byte for byte. */
final class ScalarKernels implements ResampleKernels {
    @Override
    public void horizontal(KernelArguments a) {
        MemorySegment src = a.src;
        long srcRowBytes = a.srcRowBytes;
        int yFirst = a.yFirst;
        int rows = a.rows;
        int outWidth = a.width;
        int[] bounds = a.hBounds;
        int[] weights = a.hWeights;
        int taps = a.hTaps;
        MemorySegment tmp = a.tmp;
        long tmpRow = 4L * outWidth;
        for (int r = 0; r < rows; r++) {
            long in = (yFirst + r) * srcRowBytes;
            long o = r * tmpRow;
            for (int x = 0; x < outWidth; x++) {
                int n = bounds[2 * x + 1];
                int kb = x * taps;
                int s0 = HALF;
                int s1 = HALF;
                int s2 = HALF;
                long p = in + 4L * bounds[2 * x];
                for (int t = 0; t < n; t++) {
                    int k = weights[kb + t];
                    s0 += (src.get(JAVA_BYTE, p) & 0xFF) * k;
                    s1 += (src.get(JAVA_BYTE, p + 1) & 0xFF) * k;
                    s2 += (src.get(JAVA_BYTE, p + 2) & 0xFF) * k;
                    p += 4;
                }
                tmp.set(JAVA_BYTE, o, clip8(s0));
                tmp.set(JAVA_BYTE, o + 1, clip8(s1));
                tmp.set(JAVA_BYTE, o + 2, clip8(s2));
                tmp.set(JAVA_BYTE, o + 3, (byte) 0);
                o += 4;
            }
        }
    }

    @Override
    public void accumulate(MemorySegment tmp, long row, int width, int k, int[] acc) {
        for (int i = 0; i < width; i++) {
            acc[i] += (tmp.get(JAVA_BYTE, row + i) & 0xFF) * k;
        }
    }

    @Override
    public void storeRgb(int[] acc, int pixels, MemorySegment dst, long offset) {
        long o = offset;
        for (int x = 0; x < pixels; x++) {
            dst.set(JAVA_BYTE, o, clip8(acc[4 * x]));
            dst.set(JAVA_BYTE, o + 1, clip8(acc[4 * x + 1]));
            dst.set(JAVA_BYTE, o + 2, clip8(acc[4 * x + 2]));
            o += 3;
        }
    }

    static byte clip8(int v) {
        int s = v >> PRECISION_BITS;
        return (byte) (s < 0 ? 0 : Math.min(s, 255));
    }
}
