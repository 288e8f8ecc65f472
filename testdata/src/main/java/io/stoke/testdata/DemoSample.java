package io.stoke.testdata;

import java.nio.file.Path;

/**
 * The built-in dataset that {@code stoke demo} and the benchmarks use when given none: 1,000
 * ImageNet-like JPEGs in 100 classes, generated once and cached under
 * {@code $XDG_CACHE_HOME/stoke} (default {@code ~/.cache/stoke}).
 */
public final class DemoSample {
    public static final int IMAGES = 1000;
    public static final int CLASSES = 100;
    public static final long SEED = 20_26_11_21L;

    private DemoSample() {}

    public static SyntheticImageNet.Options options() {
        return new SyntheticImageNet.Options(IMAGES, CLASSES, SEED);
    }

    /** Where the sample lives. */
    public static Path directory() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("stoke").resolve("imagenet-sample-" + IMAGES + "-v" + SyntheticImageNet.GENERATOR_VERSION);
    }

    /** Generates the sample unless an identical one is cached; returns its statistics. */
    public static SyntheticImageNet.Summary ensure() {
        return SyntheticImageNet.ensure(directory(), options());
    }
}
