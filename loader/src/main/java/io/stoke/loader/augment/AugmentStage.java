package io.stoke.loader.augment;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.random.RandomGenerator;

/**
 * A policy applied to one worker's crops: the resized (and flipped) crop is written into
 * {@link #input()}, {@link #apply} draws the image's ops from its random stream and runs them,
 * in place where an op can, else from one scratch image into the other, and says which of the two
 * holds the result. Both images are allocated once, for the crop's size; nothing is allocated per
 * image. AugMix, which mixes chains of torchvision's tensor ops rather than running PIL's, is
 * handed to {@link AugMixStage}, which takes the two images as its input and first scratch image.
 */
public final class AugmentStage implements AutoCloseable {
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment first;
    private final MemorySegment second;
    private final int width;
    private final int height;
    private final AugmentPolicy policy;
    private final PolicyDraws draws;
    private final Drawn drawn;
    /** AugMix's stage, to which {@link #apply} hands the crop; null for the other policies. */
    private final AugMixStage mix;

    private final ColourOps colour = new ColourOps();
    private final int[] fill;

    /**
     * For {@code width x height} crops.
     *
     * @throws IllegalStateException where the augmentation library is not built, naming why
     */
    public AugmentStage(AugmentPolicy policy, int width, int height) {
        refuseUnsupported(policy);
        this.policy = policy;
        this.width = width;
        this.height = height;
        long bytes = 3L * width * height;
        first = arena.allocate(bytes, 64);
        second = arena.allocate(bytes, 64);
        fill = policy.fill();
        if (policy.kind() == AugmentPolicy.Kind.AUG_MIX) {
            mix = new AugMixStage(policy, width, height, first, second);
            draws = null;
            drawn = null;
        } else {
            mix = null;
            draws = new PolicyDraws(policy, width, height);
            drawn = draws.newDrawn();
        }
    }

    /**
     * Throws, naming the policy and why, where Stoke cannot run it exactly here: without the C
     * library, or where it draws ops that are not built.
     */
    public static void refuseUnsupported(AugmentPolicy policy) {
        if (policy.kind() == AugmentPolicy.Kind.AUG_MIX) {
            try {
                TensorOps.requireLibrary();
            } catch (IllegalStateException e) {
                throw new IllegalStateException("AugMix: " + e.getMessage());
            }
            return;
        }
        if (!io.stoke.ffm.StokeAugment.available()) {
            throw new IllegalStateException(policy.kind().torchvisionName() + ": Stoke cannot augment images here: "
                    + io.stoke.ffm.StokeAugment.unavailableReason());
        }
        String geometric = GeometricOps.unavailable();
        if (geometric != null && policy.ops().stream().anyMatch(AugmentOp::geometric)) {
            throw new IllegalStateException(policy.kind().torchvisionName() + ": Stoke cannot run it exactly: "
                    + geometric + "; run it in torch's DataLoader, or pass batch_transform=");
        }
    }

    /** Where the crop is to be written: {@code width x height} RGB, 3 bytes a pixel, rows end to end. */
    public MemorySegment input() {
        return first;
    }

    /** The ops drawn for the last image (none for AugMix: see {@link #augMixDrawn}). */
    public Drawn drawn() {
        return drawn;
    }

    /** Draws this image's ops from {@code random} and runs them on {@link #input()}; returns the image that holds the result. */
    public MemorySegment apply(RandomGenerator random) {
        if (mix != null) {
            return mix.apply(random);
        }
        draws.draw(random, drawn);
        return run(drawn);
    }

    /** Runs {@code ops} on {@link #input()}; returns the image that holds the result. */
    public MemorySegment run(Drawn ops) {
        MemorySegment current = first;
        for (int i = 0; i < ops.count; i++) {
            AugmentOp op = ops.ops[i];
            double m = ops.magnitudes[i];
            MemorySegment other = current == first ? second : first;
            switch (op) {
                case IDENTITY -> {}
                case BRIGHTNESS -> colour.brightness(current, current, width, height, 1.0 + m);
                case COLOR -> colour.color(current, current, width, height, 1.0 + m);
                case CONTRAST -> colour.contrast(current, current, width, height, 1.0 + m);
                case SHARPNESS -> {
                    colour.sharpness(current, other, width, height, 1.0 + m);
                    current = other;
                }
                case POSTERIZE -> colour.posterize(current, current, width, height, (int) m);
                case SOLARIZE -> colour.solarize(current, current, width, height, policy.v2() ? 255.0 * m : m);
                case AUTO_CONTRAST -> colour.autoContrast(current, current, width, height);
                case EQUALIZE -> colour.equalize(current, current, width, height);
                case INVERT -> colour.invert(current, current, width, height);
                case HUE -> colour.hue(current, current, width, height, m);
                case GRAYSCALE -> colour.grayscale(current, current, width, height);
                default -> {
                    GeometricOps.apply(op, current, other, width, height, m, policy.interpolation(), fill);
                    current = other;
                }
            }
        }
        return current;
    }

    /** AugMix's draws for the last image, or null for the other policies. */
    public AugMixDrawn augMixDrawn() {
        return mix == null ? null : mix.drawn();
    }

    @Override
    public void close() {
        if (mix != null) {
            mix.close();
        }
        arena.close();
    }
}
