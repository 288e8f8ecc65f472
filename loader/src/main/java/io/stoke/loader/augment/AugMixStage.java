package io.stoke.loader.augment;

import io.stoke.ffm.StokeAugment;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.random.RandomGenerator;

/**
 * AugMix on one worker's crops, as torchvision's {@code AugMix.forward} runs it on a PIL image
 * (which it turns into a uint8 tensor): each chain starts from the crop and runs its ops with
 * torchvision's tensor kernels ({@link TensorOps}); the mix is float32, {@code mix = m[0] * img}
 * then {@code mix += w_i * chain_i} for each chain in turn, each product and sum rounded to
 * float32 as torch rounds them; the result is cast back to uint8 by truncation, as
 * {@code .to(torch.uint8)} does. The chains ping-pong between two scratch images and the mix lives
 * in one float32 image, all allocated once for the crop's size; nothing is allocated per image.
 */
final class AugMixStage implements AutoCloseable {
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment input;
    private final MemorySegment first;
    private final MemorySegment second;
    private final MemorySegment mix;
    private final long bytes;
    private final AugmentPolicy policy;
    private final AugMixDraws draws;
    private final AugMixDrawn drawn;
    private final TensorOps ops;
    private final double[] fill;
    private final int interpolation;

    /**
     * For {@code width x height} crops written into {@code input}; {@code scratch} is another image
     * of that size that the stage may overwrite (its result is in {@code scratch} or its own image).
     */
    AugMixStage(AugmentPolicy policy, int width, int height, MemorySegment input, MemorySegment scratch) {
        this.policy = policy;
        this.bytes = 3L * width * height;
        if (input.byteSize() < bytes || scratch.byteSize() < bytes) {
            throw new IllegalArgumentException("AugMix: images of " + width + "x" + height + " need " + bytes
                    + " bytes, not " + input.byteSize() + " and " + scratch.byteSize());
        }
        this.input = input;
        this.first = scratch;
        this.second = arena.allocate(bytes, 64);
        this.mix = arena.allocate(bytes * Float.BYTES, 64);
        this.draws = new AugMixDraws(policy, width, height);
        this.drawn = draws.newDrawn();
        this.ops = new TensorOps(width, height);
        int[] f = policy.fill();
        this.fill = f == null ? null : new double[] {f[0], f[1], f[2]};
        this.interpolation = policy.interpolation() == AugmentPolicy.NEAREST ? AffineOps.NEAREST : AffineOps.BILINEAR;
    }

    AugMixDraws draws() {
        return draws;
    }

    /** The draws of the last image. */
    AugMixDrawn drawn() {
        return drawn;
    }

    /** Draws this image's weights and chains from {@code random} and mixes them; returns the image that holds the result. */
    MemorySegment apply(RandomGenerator random) {
        draws.draw(random, drawn);
        return run(drawn);
    }

    /** Runs {@code d}'s chains on the input and mixes them; returns the image that holds the result. */
    MemorySegment run(AugMixDrawn d) {
        start(d.original);
        int at = 0;
        for (int c = 0; c < d.chains(); c++) {
            MemorySegment current = input;
            for (int i = 0; i < d.depths[c]; i++, at++) {
                MemorySegment next = current == first ? second : first;
                ops.apply(d.ops[at], d.magnitudes[at], current, next, interpolation, fill, policy.v2());
                current = next;
            }
            add(d.weights[c], current);
        }
        finish(first);
        return first;
    }

    /**
     * {@code mix = m0 * img}: uint8 promoted to float32, one rounded product. The three steps of the
     * mix run in the augmentation library ({@code stoke_tensor_mix_*}): as Java loops over segments
     * they were 71% of an AugMix worker's time, C1 compiling each access with its checks. Each
     * segment's extent was checked here, at construction: {@code input}, the two chain images and
     * the result hold {@code bytes} bytes, {@code mix} as many floats.
     */
    private void start(float m0) {
        StokeAugment.tensorMixStart(input, mix, bytes, m0);
    }

    /** {@code mix.add_(w * aug)}: the product rounded to float32, then the sum (never fused). */
    private void add(float w, MemorySegment chain) {
        checkImage(chain);
        StokeAugment.tensorMixAdd(chain, mix, bytes, w);
    }

    /** {@code .to(torch.uint8)}: truncation toward zero; the weights sum to 1, so nothing exceeds 255 by a whole step. */
    private void finish(MemorySegment out) {
        checkImage(out);
        StokeAugment.tensorMixFinish(mix, out, bytes);
    }

    /** A chain's image or the result: one of this stage's images, each of {@code bytes} bytes or more. */
    private void checkImage(MemorySegment image) {
        if (image.byteSize() < bytes) {
            throw new IllegalStateException("AugMix: an image of " + image.byteSize() + " bytes, not " + bytes);
        }
    }

    @Override
    public void close() {
        ops.close();
        arena.close();
    }
}
