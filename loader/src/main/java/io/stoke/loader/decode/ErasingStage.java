package io.stoke.loader.decode;

import io.stoke.loader.transform.CounterRandom;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomErasing;
import java.lang.foreign.MemorySegment;

/**
 * {@link RandomErasing} on each sample in its slot, after everything else has been written, as
 * torchvision's recipes erase after {@code Normalize}. Its draws come from a stream of their own,
 * keyed by (seed, epoch, dataset index) as the crop's is but apart from it, so that erasing
 * changes no crop, and a resumed or elastic run erases the same boxes with the same values. One
 * per worker; no allocation.
 */
final class ErasingStage {
    /** Keeps the erasing stream apart from the crop's, which takes the seed as it is. */
    private static final long STREAM = 0x45524153494E4721L; // "ERASING!"

    private final RandomErasing erasing;
    private final int side;
    private final long seed;
    private final CounterRandom random = new CounterRandom();
    private final CropBox box = new CropBox();

    ErasingStage(RandomErasing erasing, int side, long seed) {
        this.erasing = erasing;
        this.side = side;
        this.seed = seed;
    }

    /** Erases sample {@code sample} of epoch {@code epoch}, the float32 sample at {@code dst[offset]}, or not, as drawn. */
    void apply(int sample, long epoch, MemorySegment dst, long offset) {
        random.reset(seed ^ STREAM, epoch, sample);
        if (erasing.draw(side, side, random, box)) {
            erasing.erase(dst, offset, side, box, random);
        }
    }
}
