package io.stoke.gpu;

import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.transform.CounterRandom;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;

/**
 * The training transform's resize tables for one image, as the CPU path resizes it: the box and
 * flip drawn from (seed, epoch, sample), then the resampler's coefficients for that box. One per
 * thread (its resampler, random and box are its scratch): each reader thread draws the tables of
 * the images it reads for the GPU, a batch ahead, and the decode thread draws those it has not.
 */
final class CropTableDraw {
    private final RandomResizedCrop train;
    private final long seed;
    private final Resampler resampler;
    private final CounterRandom random = new CounterRandom();
    private final CropBox box = new CropBox();

    CropTableDraw(TransformSpec spec, long seed) {
        this.train = spec.train();
        if (train == null) {
            throw new IllegalArgumentException("no training transform to draw crops for");
        }
        this.seed = seed;
        this.resampler = new Resampler(spec);
    }

    /** Draws sample {@code sample}'s tables in {@code epoch}, for an image of {@code width x height}, into {@code out}. */
    void draw(long epoch, int sample, int width, int height, ResampleTables out) {
        random.reset(seed, epoch, sample);
        train.draw(width, height, random, box);
        resampler.cropTables(width, height, box, out);
    }
}
