package io.stoke.testdata;

/**
 * Everything about one image except its pixels: where it goes, how big it is and how it is
 * encoded. A pure function of (seed, image number), so any thread can plan any image.
 *
 * <p>The shares that matter to a benchmark (portrait, long side above 500, progressive,
 * grayscale) come from Weyl sequences rather than coin flips: they hit their target share within
 * about one image for any dataset size, where coin flips would leave a 200-image test with, say,
 * no grayscale image at all one time in fifty. The phase of each sequence comes from the seed.
 */
record ImagePlan(
        int index,
        int label,
        int width,
        int height,
        int quality,
        boolean progressive,
        boolean grayscale,
        long paintSeed) {

    /** ImageNet's training set is mostly 500 px on the long side; these are the exceptions. */
    static final double SHARE_LARGE = 0.10;

    static final double SHARE_SMALL = 0.08;
    static final double SHARE_PORTRAIT = 0.26;
    static final double SHARE_PROGRESSIVE = 0.10;
    static final double SHARE_GRAYSCALE = 0.02;
    static final int MAX_LONG_SIDE = 1600;
    static final int MIN_QUALITY = 75;
    static final int MAX_QUALITY = 95;

    // Rationally independent irrationals, so the four sequences do not march in step.
    private static final double PHI = 0.6180339887498949;
    private static final double SQRT2 = 0.4142135623730951;
    private static final double SQRT3 = 0.7320508075688772;
    private static final double SQRT5 = 0.2360679774997898;

    // Long side / short side and how often each occurs: 4:3 dominates, as in ImageNet.
    private static final double[] ASPECTS = {4.0 / 3, 3.0 / 2, 1.0, 16.0 / 9, 5.0 / 4};
    private static final double[] ASPECT_WEIGHTS = {0.58, 0.16, 0.06, 0.05, 0.06};

    static ImagePlan of(long seed, int index, int classes) {
        Rng rng = new Rng(Rng.derive(seed, index, 1));
        double size = weyl(seed, 11, index, PHI);
        int longSide;
        if (size < SHARE_LARGE) {
            // Skewed towards just above 500, with a tail to MAX_LONG_SIDE.
            longSide = 501 + (int) ((MAX_LONG_SIDE - 501) * StrictMath.pow(rng.nextDouble(), 2.2));
        } else if (size < SHARE_LARGE + SHARE_SMALL) {
            longSide = 160 + (int) (339 * StrictMath.sqrt(rng.nextDouble()));
        } else {
            longSide = 500;
        }
        double aspect = aspect(rng);
        int shortSide = Math.max(16, (int) Math.round(longSide / aspect));
        boolean portrait = weyl(seed, 12, index, SQRT2) < SHARE_PORTRAIT;
        int quality = MIN_QUALITY + rng.nextInt(MAX_QUALITY - MIN_QUALITY + 1);
        boolean progressive = weyl(seed, 13, index, SQRT3) < SHARE_PROGRESSIVE;
        boolean gray = weyl(seed, 14, index, SQRT5) < SHARE_GRAYSCALE;
        return new ImagePlan(
                index,
                index % classes,
                portrait ? shortSide : longSide,
                portrait ? longSide : shortSide,
                quality,
                progressive,
                gray,
                Rng.derive(seed, index, 2));
    }

    private static double aspect(Rng rng) {
        double u = rng.nextDouble();
        for (int i = 0; i < ASPECTS.length; i++) {
            u -= ASPECT_WEIGHTS[i];
            if (u < 0) {
                return ASPECTS[i];
            }
        }
        return rng.range(1.1, 2.0); // the remainder: odd crops and panoramas
    }

    private static double weyl(long seed, int purpose, int index, double step) {
        double phase = (Rng.derive(seed, -1, purpose) >>> 11) * 0x1.0p-53;
        double v = phase + index * step;
        return v - Math.floor(v);
    }
}
