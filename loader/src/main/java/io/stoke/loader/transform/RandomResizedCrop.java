package io.stoke.loader.transform;

import java.io.Serializable;

/**
 * torchvision's {@code RandomResizedCrop.get_params} and {@code RandomHorizontalFlip}, drawn from a
 * {@link CounterRandom}: up to ten tries of an area fraction uniform in {@code scale} and an aspect
 * ratio log-uniform in {@code ratio}, rounded to whole pixels (Python's round, half to even),
 * kept when the box fits, placed uniformly; else the fallback, the largest centred box whose ratio
 * is clamped to {@code ratio}. Then a flip with probability {@code flip}. Everything comes from the
 * header's size, before a byte of the image is decoded.
 *
 * @param scaleMin smallest area fraction (torchvision: 0.08)
 * @param scaleMax largest area fraction (1.0)
 * @param ratioMin smallest width / height (3/4)
 * @param ratioMax largest width / height (4/3)
 * @param flip     probability of a horizontal flip (0.5)
 */
public record RandomResizedCrop(double scaleMin, double scaleMax, double ratioMin, double ratioMax, double flip)
        implements Serializable {
    private static final int TRIES = 10;

    public RandomResizedCrop {
        if (!(scaleMin > 0 && scaleMin <= scaleMax && scaleMax <= 1)) {
            throw new IllegalArgumentException(
                    "scale must satisfy 0 < min <= max <= 1, not (" + scaleMin + ", " + scaleMax + ")");
        }
        if (!(ratioMin > 0 && ratioMin <= ratioMax && Double.isFinite(ratioMax))) {
            throw new IllegalArgumentException(
                    "ratio must satisfy 0 < min <= max, not (" + ratioMin + ", " + ratioMax + ")");
        }
        if (!(flip >= 0 && flip <= 1)) {
            throw new IllegalArgumentException("flip probability must be in [0, 1], not " + flip);
        }
    }

    /** torchvision's defaults: scale (0.08, 1.0), ratio (3/4, 4/3), flip 0.5. */
    public static RandomResizedCrop defaults() {
        return new RandomResizedCrop(0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0, 0.5);
    }

    /** Fills {@code box} for an image of {@code width x height} with the draws of {@code random}. */
    public CropBox draw(int width, int height, CounterRandom random, CropBox box) {
        double area = (double) width * height;
        double logMin = Math.log(ratioMin);
        double logMax = Math.log(ratioMax);
        for (int t = 0; t < TRIES; t++) {
            double targetArea = area * random.uniform(scaleMin, scaleMax);
            double aspect = Math.exp(random.uniform(logMin, logMax));
            int w = (int) Math.rint(Math.sqrt(targetArea * aspect));
            int h = (int) Math.rint(Math.sqrt(targetArea / aspect));
            if (w > 0 && w <= width && h > 0 && h <= height) {
                int top = random.nextInt(height - h + 1);
                int left = random.nextInt(width - w + 1);
                return box.set(left, top, w, h, flips(random));
            }
        }
        double inRatio = (double) width / height;
        int w;
        int h;
        if (inRatio < ratioMin) {
            w = width;
            h = (int) Math.rint(w / ratioMin);
        } else if (inRatio > ratioMax) {
            h = height;
            w = (int) Math.rint(h * ratioMax);
        } else {
            w = width;
            h = height;
        }
        // A 1-pixel-high image and a ratio bound can round h to 0; torchvision would then crop nothing.
        w = Math.max(1, Math.min(w, width));
        h = Math.max(1, Math.min(h, height));
        return box.set((width - w) / 2, (height - h) / 2, w, h, flips(random));
    }

    private boolean flips(CounterRandom random) {
        // Always one draw, so the flip does not shift with the probability.
        return random.nextDouble() < flip;
    }
}
