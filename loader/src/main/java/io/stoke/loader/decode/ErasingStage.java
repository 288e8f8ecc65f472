package io.stoke.loader.decode;

import io.stoke.loader.transform.CounterRandom;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomErasing;
import java.lang.foreign.MemorySegment;

/**
 * {@link RandomErasing} on each sample in its slot, after everything else has been written, as
 * torchvision's recipes erase after {@code Normalize}; one placed on the uint8 image erases the
 * uint8 output's bytes, or the float32 output with its bytes converted and normalised, which is
 * what torchvision's later {@code ToDtype} and {@code Normalize} make of them. Its draws come from a stream of their own,
 * keyed by (seed, epoch, dataset index) as the crop's is but apart from it, so that erasing
 * changes no crop, and a resumed or elastic run erases the same boxes with the same values. One
 * per worker; no allocation.
 */
final class ErasingStage {
    /** Keeps the erasing stream apart from the crop's, which takes the seed as it is. */
    private static final long STREAM = 0x45524153494E4721L; // "ERASING!"

    private final RandomErasing erasing;
    private final boolean bytes; // erases the uint8 output's bytes, else the float32 output's values
    private final int side;
    private final long seed;
    private final CounterRandom random = new CounterRandom();
    private final CropBox box = new CropBox();

    /**
     * @param mean the normalisation's mean (RGB), with {@code std}: a uint8 erasing of a float32
     *     output writes its bytes as the normaliser converts them, the same float for the same byte
     */
    ErasingStage(RandomErasing erasing, int side, long seed, boolean floatOutput, float[] mean, float[] std) {
        this.bytes = erasing.uint8() && !floatOutput;
        if (erasing.uint8() && floatOutput) {
            float[] value = new float[3];
            for (int c = 0; c < 3; c++) {
                value[c] = (erasing.valueByte(c) / 255f - mean[c]) / std[c]; // Resampler's normalise table
            }
            erasing = erasing.onFloat32(value);
        }
        this.erasing = erasing;
        this.side = side;
        this.seed = seed;
    }

    /** Erases sample {@code sample} of epoch {@code epoch}, the output sample at {@code dst[offset]}, or not, as drawn. */
    void apply(int sample, long epoch, MemorySegment dst, long offset) {
        random.reset(seed ^ STREAM, epoch, sample);
        if (!erasing.draw(side, side, random, box)) {
            return;
        }
        if (bytes) {
            erasing.eraseBytes(dst, offset, side, box);
        } else {
            erasing.erase(dst, offset, side, box, random);
        }
    }
}
