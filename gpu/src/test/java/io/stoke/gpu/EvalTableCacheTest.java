package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The evaluation transform's tables kept by image size, against a resampler's own, drawn fresh each time. */
class EvalTableCacheTest {
    private static final int[][] SIZES = {{500, 375}, {375, 500}, {500, 333}, {224, 224}, {4032, 3024}, {17, 900}};

    /** Every int the GPU's resize reads of {@code t} ({@link ResampleTables#writeTo}), and its geometry. */
    private static int[] written(ResampleTables t) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(4L * t.ints());
            t.writeTo(s, 0);
            int[] ints = s.toArray(ValueLayout.JAVA_INT);
            int[] all = new int[ints.length + 6];
            System.arraycopy(ints, 0, all, 6, ints.length);
            all[0] = t.cols();
            all[1] = t.outRows();
            all[2] = t.yFirst();
            all[3] = t.rows();
            all[4] = t.hTaps();
            all[5] = t.vTaps();
            return all;
        }
    }

    private static int[] fresh(TransformSpec spec, int w, int h) {
        ResampleTables t = new ResampleTables();
        new Resampler(spec).evalTables(w, h, t);
        return written(t);
    }

    @Test
    void eachSizesTablesAreTheResamplersAndDrawnOnce() {
        TransformSpec spec = TransformSpec.defaults();
        EvalTableCache cache = new EvalTableCache(new Resampler(spec), 1L << 21);
        SplittableRandom random = new SplittableRandom(7);
        for (int k = 0; k < 600; k++) {
            int[] size = SIZES[random.nextInt(SIZES.length)];
            ResampleTables t = cache.get(size[0], size[1]);
            assertArrayEquals(fresh(spec, size[0], size[1]), written(t), size[0] + " x " + size[1] + ", image " + k);
            assertSame(t, cache.get(size[0], size[1]), "the same size's tables, held");
        }
        assertEquals(SIZES.length, cache.drawn(), "each size drawn once over 600 images");
        assertEquals(SIZES.length, cache.sizes());
        assertEquals(0, cache.emptied());
    }

    @Test
    void aWidthAndAHeightSwappedAreTwoSizes() {
        TransformSpec spec = TransformSpec.defaults();
        EvalTableCache cache = new EvalTableCache(new Resampler(spec), 1L << 21);
        int[] landscape = written(cache.get(500, 375));
        int[] portrait = written(cache.get(375, 500));
        assertArrayEquals(fresh(spec, 375, 500), portrait);
        assertArrayEquals(fresh(spec, 500, 375), landscape);
        assertTrue(landscape.length != portrait.length || !java.util.Arrays.equals(landscape, portrait));
        assertEquals(2, cache.drawn());
    }

    @Test
    void aFullCacheEmptiesAndStaysWithinItsBoundWithTheSameTables() {
        // A bicubic squash to 160: another spec's tables, and a bound of about three sizes' worth.
        TransformSpec spec =
                TransformSpec.defaults().withSquash(160, 160).withInterpolation(TransformSpec.Interpolation.BICUBIC);
        long bound = 3L
                * new EvalTableCache(new Resampler(spec), 1L << 21)
                        .get(500, 375)
                        .ints();
        EvalTableCache cache = new EvalTableCache(new Resampler(spec), bound);
        SplittableRandom random = new SplittableRandom(11);
        for (int k = 0; k < 300; k++) {
            int w = 300 + random.nextInt(8);
            int h = 200 + random.nextInt(8);
            assertArrayEquals(fresh(spec, w, h), written(cache.get(w, h)), w + " x " + h + ", image " + k);
            assertTrue(cache.heldInts() <= bound, cache.heldInts() + " ints held of " + bound);
        }
        assertTrue(cache.emptied() > 0, "64 sizes through room for about 3");
        assertTrue(cache.drawn() > 64, "sizes drawn again after an emptying: " + cache.drawn());
    }

    @Test
    void aBoundOfNothingIsRefused() {
        assertThrows(
                IllegalArgumentException.class, () -> new EvalTableCache(new Resampler(TransformSpec.defaults()), 0));
    }
}
