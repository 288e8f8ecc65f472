package io.stoke.bench;

import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.transform.CounterRandom;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The training transform's resize coefficients alone ({@link Resampler#cropTables}: PIL's
 * {@code precompute_coeffs} for both axes of a RandomResizedCrop box to 224 x 224), which every
 * image of a training epoch computes afresh, its box being its own. The boxes are drawn once, as the
 * loader draws them, over an image of {@code width x height}; microseconds per image on one thread.
 *
 * <p>{@code -jvmArgsAppend -XX:TieredStopAtLevel=1} times them as Stoke's launcher runs them (C1
 * only, for its start).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1)
public class CropTablesBenchmark {
    /** The original's size: 0.2 MP by default, as ImageNet's. */
    @Param("500")
    public int width;

    @Param("375")
    public int height;

    @Param({"BILINEAR", "BICUBIC"})
    public TransformSpec.Interpolation interpolation;

    private static final int BOXES = 1024;

    private Resampler resampler;
    private final ResampleTables tables = new ResampleTables();
    private final CropBox[] boxes = new CropBox[BOXES];
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        TransformSpec spec = TransformSpec.defaults()
                .withDctScaling(TransformSpec.DctScaling.NONE)
                .withTrain(224, RandomResizedCrop.defaults())
                .withInterpolation(interpolation);
        resampler = new Resampler(spec);
        CounterRandom random = new CounterRandom();
        for (int i = 0; i < BOXES; i++) {
            random.reset(7, 0, i);
            boxes[i] = RandomResizedCrop.defaults().draw(width, height, random, new CropBox());
            boxes[i].flip = (i & 1) == 1;
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        resampler.close();
    }

    @Benchmark
    public int cropTables() {
        int i = next;
        next = (i + 1) & (BOXES - 1);
        resampler.cropTables(width, height, boxes[i], tables);
        return tables.hTaps();
    }
}
