package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;

import java.lang.foreign.MemorySegment;

/**
 * The CPU reference of the device normalisation kernel ({@code native/cuda/normalize.cu}):
 * uint8 {@code [n, h, w, 3]} to float32 {@code [n, 3, h, w]}, each value {@code (x / 255 - mean[c]) /
 * std[c]}, computed in single precision with each operation rounded, exactly as the kernel does
 * (it uses {@code __fdiv_rn}/{@code __fsub_rn}). It is also the host loader's formula, so the three
 * agree to the bit.
 */
public final class NormalizeReference {
    private NormalizeReference() {}

    /** One value: what the kernel writes for byte {@code x} of channel {@code c}. */
    public static float normalize(int x, float mean, float std) {
        return ((x & 0xFF) / 255f - mean) / std;
    }

    /**
     * Normalises {@code n} samples from {@code src} into {@code dst}.
     *
     * @throws IndexOutOfBoundsException when either segment is too small, before anything is written
     */
    public static void normalize(MemorySegment src, MemorySegment dst, int n, int h, int w, float[] mean, float[] std) {
        if (n < 0 || h < 1 || w < 1 || mean.length != 3 || std.length != 3) {
            throw new IllegalArgumentException("bad shape or parameters: n=" + n + " h=" + h + " w=" + w);
        }
        long hw = (long) h * w;
        long values = n * hw * 3;
        if (src.byteSize() < values || dst.byteSize() < values * 4) {
            throw new IndexOutOfBoundsException("need " + values + " source bytes and " + values * 4
                    + " destination bytes, have " + src.byteSize() + " and " + dst.byteSize());
        }
        for (long p = 0; p < n * hw; p++) {
            long sample = p / hw;
            long q = p - sample * hw;
            for (int c = 0; c < 3; c++) {
                float v = normalize(src.get(JAVA_BYTE, p * 3 + c), mean[c], std[c]);
                dst.set(JAVA_FLOAT_UNALIGNED, ((sample * 3 + c) * hw + q) * 4, v);
            }
        }
    }
}
