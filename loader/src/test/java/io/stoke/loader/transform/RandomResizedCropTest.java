package io.stoke.loader.transform;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.PythonReference;
import java.util.Arrays;
import java.util.List;
import java.util.function.ToDoubleFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Stoke's crop boxes against torchvision's own {@code RandomResizedCrop.get_params}. */
class RandomResizedCropTest {
    private static int[][] stoke(RandomResizedCrop crop, int w, int h, int n) {
        CounterRandom random = new CounterRandom();
        CropBox box = new CropBox();
        int[][] out = new int[n][];
        for (int k = 0; k < n; k++) {
            random.reset(1, 0, k);
            crop.draw(w, h, random, box);
            assertTrue(
                    box.left >= 0
                            && box.top >= 0
                            && box.width >= 1
                            && box.height >= 1
                            && box.left + box.width <= w
                            && box.top + box.height <= h,
                    box.toString());
            out[k] = new int[] {box.left, box.top, box.width, box.height};
        }
        return out;
    }

    /** The two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical CDFs. */
    static double ks(double[] a, double[] b) {
        Arrays.sort(a);
        Arrays.sort(b);
        int i = 0;
        int j = 0;
        double d = 0;
        while (i < a.length && j < b.length) {
            double x = Math.min(a[i], b[j]);
            while (i < a.length && a[i] <= x) {
                i++;
            }
            while (j < b.length && b[j] <= x) {
                j++;
            }
            d = Math.max(d, Math.abs((double) i / a.length - (double) j / b.length));
        }
        return d;
    }

    private static double[] of(int[][] boxes, ToDoubleFunction<int[]> f) {
        return Arrays.stream(boxes).mapToDouble(f).toArray();
    }

    /**
     * 100,000 draws from each (20,000 for the less common shapes), compared on the crop's area,
     * its aspect ratio and its place: the Kolmogorov-Smirnov distance must stay under the 1e-4
     * critical value. Both sides draw fixed sequences, so the verdict never changes between runs.
     */
    @ParameterizedTest(name = "{0}x{1}, {2} draws")
    @CsvSource({"500, 375, 100000", "375, 500, 20000", "100, 1000, 20000", "64, 64, 20000", "1000, 40, 20000"})
    void boxesFollowTorchvisionsDistribution(int w, int h, int n) throws Exception {
        RandomResizedCrop crop = RandomResizedCrop.defaults();
        int[][] tv = PythonReference.cropParams(
                w, h, n, 7, crop.scaleMin(), crop.scaleMax(), crop.ratioMin(), crop.ratioMax());
        int[][] st = stoke(crop, w, h, n);
        assertEquals(n, tv.length);
        double critical = Math.sqrt(-Math.log(1e-4 / 2) / 2) * Math.sqrt(2.0 / n);
        double area = (double) w * h;
        String[] names = {"area", "log aspect", "left", "top"};
        List<ToDoubleFunction<int[]>> measures =
                List.of(b -> b[2] * b[3] / area, b -> Math.log((double) b[2] / b[3]), b -> b[0], b -> b[1]);
        for (int m = 0; m < names.length; m++) {
            double d = ks(of(st, measures.get(m)), of(tv, measures.get(m)));
            assertTrue(d < critical, names[m] + ": KS distance " + d + " over " + critical + " for " + w + "x" + h);
        }
    }

    @ParameterizedTest(name = "{0}x{1}: whole-area crops never fit, the fallback is {4}x{5}+{2}+{3}")
    @CsvSource({
        "100, 1000, 0, 433, 100, 133", // narrower than 3/4: full width, h = round(100 / 0.75)
        "1000, 100, 433, 0, 133, 100"
    }) // wider than 4/3: full height, w = round(100 * 4/3)
    void theFallbackIsTorchvisionsCentredBox(int w, int h, int left, int top, int bw, int bh) {
        // With scale (1, 1) and an image this far outside the ratios, no try can fit: always the fallback.
        RandomResizedCrop crop = new RandomResizedCrop(1.0, 1.0, 3.0 / 4.0, 4.0 / 3.0, 0);
        CounterRandom random = new CounterRandom();
        CropBox box = new CropBox();
        random.reset(3, 1, 4);
        crop.draw(w, h, random, box);
        assertEquals(List3.of(left, top, bw, bh), List3.of(box.left, box.top, box.width, box.height));
        assertFalse(box.flip);
    }

    /** Boxes as lists, so that a failure prints all four numbers. */
    private static final class List3 {
        static List<Integer> of(int... v) {
            return Arrays.stream(v).boxed().toList();
        }
    }

    @Test
    void flipsHalfTheTimeAndTheSameSampleAlwaysGetsTheSameBox() {
        RandomResizedCrop crop = RandomResizedCrop.defaults();
        CounterRandom random = new CounterRandom();
        CropBox a = new CropBox();
        CropBox b = new CropBox();
        int flips = 0;
        int n = 20000;
        int sameAcrossEpochs = 0;
        for (int k = 0; k < n; k++) {
            random.reset(42, 3, k);
            crop.draw(500, 375, random, a);
            random.reset(42, 3, k);
            crop.draw(500, 375, random, b);
            assertEquals(a.toString(), b.toString(), "sample " + k);
            flips += a.flip ? 1 : 0;
            random.reset(42, 4, k);
            crop.draw(500, 375, random, b);
            sameAcrossEpochs += a.toString().equals(b.toString()) ? 1 : 0;
        }
        // Binomial(20000, 0.5): 6 standard deviations are 424.
        assertEquals(n / 2.0, flips, 424);
        assertTrue(sameAcrossEpochs < n / 100, "epochs draw anew: " + sameAcrossEpochs + " identical boxes");
    }
}
