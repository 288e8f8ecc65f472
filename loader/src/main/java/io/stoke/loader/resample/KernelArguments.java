package io.stoke.loader.resample;

import java.lang.foreign.MemorySegment;

/**
 * The arguments of one resize's two kernel passes ({@link ResampleKernels#horizontal},
 * {@link ResampleKernels#vertical}), in one place instead of three long signatures. Owned by a
 * {@link Resampler}, which keeps its coefficients and scratch here and re-points the per-image
 * fields before each resize: made once per worker, so no image allocates.
 *
 * <p>The horizontal pass reads source rows {@code [yFirst, yFirst + rows)} of {@code src} (rows
 * {@code srcRowBytes} apart) and writes {@code width} RGBX pixels a row into {@code tmp}; the
 * vertical pass reads those rows and writes {@code width x outRows} pixels at {@code dst[offset]}.
 * Output {@code i} of an axis reads {@code bounds[2i + 1]} taps from {@code bounds[2i]}, weighted
 * by {@code weights[i * taps + t]}.
 */
final class KernelArguments {
    // Per image.
    MemorySegment src;
    long srcRowBytes;
    int yFirst;
    int rows;
    int width;
    int outRows;
    /** Null: uint8 RGB out; else value {@code v} of channel {@code c} becomes {@code table[256c + v]} (float32, channels first). */
    float[] table;

    MemorySegment dst;
    long offset;

    // Per coefficient change (most images of a dataset share them).
    int[] hBounds;
    int[] hWeights;
    int hTaps;
    /** Changes whenever {@link #hBounds} or {@link #hWeights} do, so kernels may keep what they derive from them. */
    long hVersion;

    int[] vBounds;
    int[] vWeights;
    int vTaps;

    // Scratch, grown once per new maximum.
    /** The intermediate RGBX rows. */
    MemorySegment tmp;
    /** A row's accumulators, {@code 4 * width}. */
    int[] acc;
}
