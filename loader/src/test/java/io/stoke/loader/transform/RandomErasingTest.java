package io.stoke.loader.transform;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.augment.ChiSquare;
import io.stoke.loader.testing.PythonReference;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.ToDoubleFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Stoke's {@link RandomErasing} against torchvision's {@code RandomErasing.get_params} and {@code F.erase}. */
class RandomErasingTest {
    /** A float32 channels-first sample of noise, as native-order bytes. */
    private static byte[] noise(int side, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        MemorySegment s = MemorySegment.ofArray(new byte[12 * side * side]);
        for (int i = 0; i < 3 * side * side; i++) {
            s.set(JAVA_FLOAT_UNALIGNED, 4L * i, (float) (r.nextDouble() * 4 - 2));
        }
        return s.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }

    @ParameterizedTest(name = "{0}: box {3}x{4}+{1}+{2} of 64, value {5}")
    @CsvSource({
        "a square, 5, 9, 20, 20, 0",
        "a tall box at the corner, 0, 0, 3, 63, 0.5",
        "a wide box, 10, 60, 54, 4, '-2.1179,-2.0357,-1.8044'", // ImageNet's normalised black
        "one pixel, 63, 63, 1, 1, '1,2,3'"
    })
    void erasingAFixedBoxEqualsTorchvisionsErase(String what, int left, int top, int w, int h, String values)
            throws Exception {
        int side = 64;
        String[] parts = values.split(",");
        float[] value = new float[parts.length];
        for (int i = 0; i < parts.length; i++) {
            value[i] = Float.parseFloat(parts[i]);
        }
        byte[] chw = noise(side, left * 31L + top);
        byte[] expected = PythonReference.erase(chw, side, left, top, w, h, value);
        RandomErasing erasing = new RandomErasing(1, 0.02, 0.33, 0.3, 3.3, value);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(chw.length + 16);
            MemorySegment.copy(MemorySegment.ofArray(chw), 0, dst, 8, chw.length);
            erasing.erase(dst, 8, side, new CropBox().set(left, top, w, h, false), new CounterRandom());
            assertArrayEquals(expected, dst.asSlice(8, chw.length).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
            assertEquals(0, dst.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0), "wrote before the sample");
            assertEquals(
                    0,
                    dst.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 8 + chw.length),
                    "wrote past the sample");
        }
    }

    /**
     * On PILToTensor()'s uint8 image: the bytes equal torchvision's F.erase of the same box with
     * the same value, which torch casts to uint8 by truncation (127.9 is 127).
     */
    @ParameterizedTest(name = "{0}: box {3}x{4}+{1}+{2} of 48, value {5}")
    @CsvSource({
        "a square, 5, 9, 20, 20, 0",
        "a tall box at the corner, 0, 0, 3, 47, 127.9",
        "a wide box, 10, 44, 38, 4, '124,116,104'", // the ImageNet mean, as the recipes' uint8 fill
        "one pixel, 47, 47, 1, 1, '255.5,0.99,3'"
    })
    void erasingAUint8ImageEqualsTorchvisionsErase(String what, int left, int top, int w, int h, String values)
            throws Exception {
        int side = 48;
        String[] parts = values.split(",");
        float[] value = new float[parts.length];
        for (int i = 0; i < parts.length; i++) {
            value[i] = Float.parseFloat(parts[i]);
        }
        byte[] hwc = new byte[3 * side * side];
        new SplittableRandom(left * 31L + top).nextBytes(hwc);
        byte[] expected = PythonReference.eraseUint8(hwc, side, left, top, w, h, value);
        RandomErasing erasing = new RandomErasing(1, 0.02, 0.33, 0.3, 3.3, value, true);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(hwc.length + 16);
            MemorySegment.copy(MemorySegment.ofArray(hwc), 0, dst, 8, hwc.length);
            erasing.eraseBytes(dst, 8, side, new CropBox().set(left, top, w, h, false));
            assertArrayEquals(expected, dst.asSlice(8, hwc.length).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
            assertEquals(0, dst.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0), "wrote before the sample");
            assertEquals(
                    0,
                    dst.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 8 + hwc.length),
                    "wrote past the sample");
            assertThrows(
                    IndexOutOfBoundsException.class,
                    () -> erasing.eraseBytes(dst, 8, side, new CropBox().set(side - w + 1, top, w, h, false)));
        }
    }

    @Test
    void aUint8ErasingRefusesRandomValuesAndValuesACastWouldWrap() {
        IllegalArgumentException random = assertThrows(
                IllegalArgumentException.class, () -> new RandomErasing(0.5, 0.02, 0.33, 0.3, 3.3, null, true));
        assertTrue(random.getMessage().contains("255 on x86, 0 on ARM"), random.getMessage());
        for (float v : new float[] {-0.5f, 256f, Float.NaN}) {
            IllegalArgumentException wraps = assertThrows(
                    IllegalArgumentException.class,
                    () -> new RandomErasing(0.5, 0.02, 0.33, 0.3, 3.3, new float[] {1, v, 2}, true));
            assertTrue(wraps.getMessage().contains("must be in [0, 256)"), wraps.getMessage());
        }
    }

    private static List<int[]> stoke(RandomErasing erasing, int side, int n) {
        return stoke(erasing, side, n, false);
    }

    /** Stoke's boxes for keys (5, 0, k), k below n; with {@code misses}, null where none was erased. */
    private static List<int[]> stoke(RandomErasing erasing, int side, int n, boolean misses) {
        CounterRandom random = new CounterRandom();
        CropBox box = new CropBox();
        List<int[]> out = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            random.reset(5, 0, k);
            if (erasing.draw(side, side, random, box)) {
                assertTrue(box.left + box.width <= side && box.top + box.height <= side, box.toString());
                out.add(new int[] {box.left, box.top, box.width, box.height});
            } else if (misses) {
                out.add(null);
            }
        }
        return out;
    }

    private static double[] of(List<int[]> boxes, ToDoubleFunction<int[]> f) {
        return boxes.stream().mapToDouble(f).toArray();
    }

    // The cases of boxesFollowTorchvisionsGetParams: {side, scale min, scale max, ratio min, ratio max}.
    private static final List<double[]> CASES =
            List.of(new double[] {224, 0.02, 0.33, 0.3, 3.3}, new double[] {176, 0.02, 0.33, 0.3, 3.3}, new double[] {
                32, 0.1, 0.9, 0.3, 3.3
            });
    private static final int DRAWS = 100_000;
    private static int[][][] torchvisions;

    /** torchvision's draws for every case, made in one Python run at first use. */
    private static synchronized List<int[]> torchvisions(int side, double smin) throws Exception {
        if (torchvisions == null) {
            torchvisions = PythonReference.eraseParams(CASES, DRAWS, 11, 2000);
        }
        for (int c = 0; c < CASES.size(); c++) {
            if (CASES.get(c)[0] == side && CASES.get(c)[1] == smin) {
                return Arrays.asList(torchvisions[c]);
            }
        }
        throw new IllegalArgumentException("not one of CASES: " + side + ", " + smin);
    }

    private static Map<String, Integer> counts(List<int[]> boxes, java.util.function.Function<int[], String> key) {
        Map<String, Integer> out = new HashMap<>();
        for (int[] b : boxes) {
            out.merge(b == null ? "none" : key.apply(b), 1, Integer::sum);
        }
        return out;
    }

    /**
     * 100,000 draws from each, the count: a chi-square test of the box's size (width and
     * height together, "nothing fitted" one more outcome), of its left and of its top, each p &gt;
     * 0.001; and the Kolmogorov-Smirnov distance of area, aspect and place under the p = 0.001
     * critical value. Both sides draw fixed sequences, so the verdict never changes.
     */
    @ParameterizedTest(name = "{0}: scale ({1}, {2}), ratio ({3}, {4})")
    @CsvSource({"224, 0.02, 0.33, 0.3, 3.3", "176, 0.02, 0.33, 0.3, 3.3", "32, 0.1, 0.9, 0.3, 3.3"})
    void boxesFollowTorchvisionsGetParams(int side, double smin, double smax, double rmin, double rmax)
            throws Exception {
        RandomErasing erasing = new RandomErasing(1, smin, smax, rmin, rmax, null);
        List<int[]> tvAll = torchvisions(side, smin);
        List<int[]> stAll = stoke(erasing, side, DRAWS, true);
        String[] tables = {"size (width x height)", "left", "top"};
        List<java.util.function.Function<int[], String>> keys =
                List.of(b -> b[2] + "x" + b[3], b -> "" + b[0], b -> "" + b[1]);
        for (int t = 0; t < tables.length; t++) {
            ChiSquare.Result r = ChiSquare.twoSample(counts(stAll, keys.get(t)), counts(tvAll, keys.get(t)));
            assertTrue(r.p() > 1e-3, tables[t] + ": chi-square " + r + " for " + side);
        }
        List<int[]> tv = tvAll.stream().filter(b -> b != null).toList();
        List<int[]> st = stAll.stream().filter(b -> b != null).toList();
        double critical = Math.sqrt(-Math.log(1e-3 / 2) / 2)
                * Math.sqrt((double) (tv.size() + st.size()) / ((double) tv.size() * st.size()));
        String[] names = {"area", "log aspect (h / w)", "left", "top"};
        List<ToDoubleFunction<int[]>> measures = List.of(
                b -> (double) b[2] * b[3], b -> Math.log((double) b[3] / Math.max(1, b[2])), b -> b[0], b -> b[1]);
        for (int m = 0; m < names.length; m++) {
            double d = RandomResizedCropTest.ks(of(st, measures.get(m)), of(tv, measures.get(m)));
            assertTrue(d < critical, names[m] + ": KS distance " + d + " over " + critical + " for " + side);
        }
        // Where no try fits (large scales on a small image), nothing is erased, as often as torchvision.
        double missed = 1 - (double) tv.size() / DRAWS;
        double sigma = Math.sqrt(Math.max(missed, 1e-4) * (1 - missed) / DRAWS);
        assertEquals(
                missed, 1 - (double) st.size() / DRAWS, 5 * sigma * Math.sqrt(2), "share of draws that erase nothing");
    }

    @Test
    void theChanceOfErasingIsP() {
        RandomErasing erasing = new RandomErasing(0.3, 0.02, 0.33, 0.3, 3.3, new float[] {0});
        int n = 20000;
        int erased = stoke(erasing, 224, n).size();
        double sigma = Math.sqrt(0.3 * 0.7 / n);
        assertEquals(0.3, (double) erased / n, 5 * sigma);
    }

    @Test
    void randomValuesAreStandardNormalAndTheSameForTheSameKey() {
        RandomErasing erasing = new RandomErasing(1, 0.02, 0.33, 0.3, 3.3, null);
        int side = 96;
        CropBox box = new CropBox().set(10, 20, 60, 50, false);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(12L * side * side);
            MemorySegment b = arena.allocate(12L * side * side);
            CounterRandom random = new CounterRandom();
            random.reset(1, 2, 3);
            erasing.erase(a, 0, side, box, random);
            random.reset(1, 2, 3);
            erasing.erase(b, 0, side, box, random);
            assertEquals(-1, a.mismatch(b), "the same key gives the same values");
            double[] values = new double[3 * 60 * 50];
            int k = 0;
            for (int c = 0; c < 3; c++) {
                for (int y = 0; y < side; y++) {
                    for (int x = 0; x < side; x++) {
                        float v = a.get(JAVA_FLOAT_UNALIGNED, 4L * ((long) c * side * side + (long) y * side + x));
                        boolean inside = x >= 10 && x < 70 && y >= 20 && y < 70;
                        if (inside) {
                            values[k++] = v;
                        } else {
                            assertEquals(0f, v, "outside the box at " + c + "," + x + "," + y);
                        }
                    }
                }
            }
            // Against the normal CDF by Kolmogorov-Smirnov, p = 0.001.
            Arrays.sort(values);
            double d = 0;
            for (int i = 0; i < values.length; i++) {
                double cdf = normalCdf(values[i]);
                d = Math.max(
                        d,
                        Math.max(
                                Math.abs(cdf - (double) i / values.length),
                                Math.abs(cdf - (double) (i + 1) / values.length)));
            }
            double critical = Math.sqrt(-Math.log(1e-3 / 2) / 2) / Math.sqrt(values.length);
            assertTrue(d < critical, "KS distance from the standard normal " + d + " over " + critical);
        }
    }

    /** The standard normal CDF by a Simpson sum of the density from 0: plenty for a KS check. */
    private static double normalCdf(double x) {
        int n = 2000;
        double h = Math.abs(x) / n;
        double s = 0;
        for (int i = 0; i <= n; i++) {
            double t = i * h;
            double f = Math.exp(-t * t / 2) / Math.sqrt(2 * Math.PI);
            s += (i == 0 || i == n ? 1 : i % 2 == 1 ? 4 : 2) * f;
        }
        double half = s * h / 3;
        return x >= 0 ? 0.5 + half : 0.5 - half;
    }

    @Test
    void aBoxOutsideTheSampleOrASampleOutsideItsSegmentIsRefused() {
        RandomErasing erasing = RandomErasing.defaults();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(12L * 32 * 32);
            CounterRandom random = new CounterRandom();
            assertThrows(
                    IndexOutOfBoundsException.class,
                    () -> erasing.erase(dst, 0, 32, new CropBox().set(30, 0, 3, 3, false), random));
            assertThrows(
                    IndexOutOfBoundsException.class,
                    () -> erasing.erase(dst, 4, 32, new CropBox().set(0, 0, 3, 3, false), random));
            assertThrows(IllegalArgumentException.class, () -> new RandomErasing(1.5, 0.02, 0.33, 0.3, 3.3, null));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> new RandomErasing(0.5, 0.02, 0.33, 0.3, 3.3, new float[] {1, 2}));
        }
    }
}
