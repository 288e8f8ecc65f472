package io.stoke.loader.transform;

import io.stoke.loader.augment.AugmentPolicy;
import io.stoke.loader.augment.AugmentStage;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;

/**
 * What each sample becomes: decoded, its shorter side resized to {@code resize} with PIL's
 * {@link #interpolation} filter (antialiased bilinear by default, as torchvision's {@code Resize}), center-cropped to
 * {@code crop} x {@code crop}, and written as uint8 HWC or as float32 CHW normalised by
 * {@code (x / 255 - mean) / std}. That is the evaluation transform; with {@code train} set, the
 * training one instead: torchvision's {@code RandomResizedCrop(crop)} and
 * {@code RandomHorizontalFlip}, the same filter, {@code resize} unused.
 *
 * @param resize      target of the shorter side (torchvision {@code Resize(resize)})
 * @param crop        side of the square center crop; at most {@code resize}
 * @param output      the element type and layout of the output
 * @param mean        per-channel mean (RGB) for {@link Output#FLOAT32_CHW}
 * @param std         per-channel std (RGB) for {@link Output#FLOAT32_CHW}
 * @param dctScaling  which libjpeg-turbo DCT scale factors may be used to decode smaller
 * @param maxPixels   the largest width x height a JPEG header may claim (decompression bombs)
 * @param maxFileBytes the largest file that is read
 * @param train       the random crop and flip of the training transform, or null for evaluation
 * @param evalRegion  whether the evaluation transform decodes only the part of the image its
 *     centre crop reads (the default: the same bytes as a whole decode, for less work); false
 *     decodes whole images, for comparisons
 * @param interpolation the resize's filter, for both transforms (torchvision's {@code interpolation})
 * @param erasing     torchvision's {@code RandomErasing} on the float32 output (or on the uint8
 *     image, {@link RandomErasing#uint8()}), or null for none
 * @param augment     an auto-augment policy run on the training transform's crop after the flip, in
 *     {@code AugmentPolicy}'s compact spelling ({@code ta_wide:31}, {@code ra:2:9:31},
 *     {@code aa:imagenet}), or null for none; refused here where Stoke cannot run it exactly
 * @param squash      whether the evaluation transform resizes both sides to {@code resize}, the aspect
 *     ratio not kept (torchvision's {@code Resize((resize, resize))}: timm's {@code crop_mode="squash"},
 *     open_clip's {@code resize_mode="squash"}), where it otherwise resizes the shorter side
 */
public record TransformSpec(
        int resize,
        int crop,
        Output output,
        float[] mean,
        float[] std,
        DctScaling dctScaling,
        long maxPixels,
        long maxFileBytes,
        RandomResizedCrop train,
        boolean evalRegion,
        Interpolation interpolation,
        RandomErasing erasing,
        String augment,
        boolean squash)
        implements Serializable {
    public static final float[] IMAGENET_MEAN = {0.485f, 0.456f, 0.406f};
    public static final float[] IMAGENET_STD = {0.229f, 0.224f, 0.225f};

    /** Output element type and layout. */
    public enum Output {
        /** uint8, height x width x RGB: what {@code PILToTensor} would give, channels last. */
        UINT8_HWC,
        /** float32, RGB x height x width, normalised: what {@code ToTensor + Normalize} gives. */
        FLOAT32_CHW
    }

    /**
     * The resize's filter, as PIL computes it on a PIL image (torchvision's {@code InterpolationMode}
     * of the same name; PIL always antialiases, as {@code antialias=True}).
     */
    public enum Interpolation {
        /** The triangle filter, support 1, widened by the downscale factor. */
        BILINEAR,
        /** The cubic convolution filter of a = -0.5, support 2, widened by the downscale factor. */
        BICUBIC,
        /** One source pixel per output pixel, no filter: PIL's affine scale. */
        NEAREST
    }

    /** Which DCT scale factors the decoder may use to skip resolution it would throw away. */
    public enum DctScaling {
        /** Always decode at full size: pixels identical to PIL's full decode + resize. */
        NONE,
        /** 1/2, 1/4, 1/8: the factors libjpeg-turbo has SIMD inverse DCTs for. */
        POWERS_OF_TWO,
        /** Any M/8 libjpeg-turbo offers below 1. */
        ALL
    }

    public TransformSpec {
        Objects.requireNonNull(interpolation, "interpolation");
        if (resize < 1 || crop < 1 || crop > resize) {
            throw new IllegalArgumentException("need 1 <= crop <= resize, got resize " + resize + ", crop " + crop);
        }
        if (resize > 16384) {
            throw new IllegalArgumentException("resize " + resize + " is beyond 16384");
        }
        if (mean.length != 3 || std.length != 3) {
            throw new IllegalArgumentException("mean and std need 3 values (RGB)");
        }
        for (float s : std) {
            if (!(s > 0)) {
                throw new IllegalArgumentException("std must be positive: " + Arrays.toString(std));
            }
        }
        if (maxPixels < 1 || maxFileBytes < 1) {
            throw new IllegalArgumentException("budgets must be positive");
        }
        if (erasing != null && !erasing.uint8() && output != Output.FLOAT32_CHW) {
            throw new IllegalArgumentException("RandomErasing erases the float32 output (after ToTensor and"
                    + " Normalize, where torchvision's recipes place it): it needs --output float32, or a uint8"
                    + " value (--erase-value uint8:V)");
        }
        mean = mean.clone();
        std = std.clone();
        if (squash && train != null) {
            throw new IllegalArgumentException("the squash resize is an evaluation transform's; the training transform"
                    + " resizes its random crop");
        }
        if (augment != null) {
            if (train == null) {
                throw new IllegalArgumentException("--augment " + augment + ": torchvision's auto-augment policies run"
                        + " after RandomResizedCrop and the flip; Stoke runs them with the training transform only");
            }
            AugmentPolicy policy = AugmentPolicy.parse(augment);
            AugmentStage.refuseUnsupported(policy);
            augment = policy.toString();
        }
    }

    /**
     * Resize 256, CenterCrop 224, uint8 HWC (the ImageNet evaluation transform), DCT scaling by
     * powers of two, 36 megapixels and 64 MiB per file at most.
     */
    public static TransformSpec defaults() {
        return new TransformSpec(
                256,
                224,
                Output.UINT8_HWC,
                IMAGENET_MEAN,
                IMAGENET_STD,
                DctScaling.POWERS_OF_TWO,
                36L * 1000 * 1000,
                64L << 20,
                null,
                true,
                Interpolation.BILINEAR,
                null,
                null,
                false);
    }

    public TransformSpec withResize(int resize, int crop) {
        Copy c = new Copy(this);
        c.resize = resize;
        c.crop = crop;
        return c.build();
    }

    public TransformSpec withOutput(Output output) {
        Copy c = new Copy(this);
        c.output = output;
        return c.build();
    }

    public TransformSpec withDctScaling(DctScaling dctScaling) {
        Copy c = new Copy(this);
        c.dctScaling = dctScaling;
        return c.build();
    }

    public TransformSpec withMaxPixels(long maxPixels) {
        Copy c = new Copy(this);
        c.maxPixels = maxPixels;
        return c.build();
    }

    public TransformSpec withNormalization(float[] mean, float[] std) {
        Copy c = new Copy(this);
        c.mean = mean;
        c.std = std;
        return c.build();
    }

    /**
     * The training transform: {@code RandomResizedCrop(size)} with {@code crop}'s scale and ratio,
     * then a flip with its probability; the other settings stay.
     */
    public TransformSpec withTrain(int size, RandomResizedCrop crop) {
        Copy c = new Copy(this);
        c.resize = size;
        c.crop = size;
        c.train = Objects.requireNonNull(crop, "crop");
        c.squash = false;
        return c.build();
    }

    /** The evaluation transform, {@code Resize(resize)} and {@code CenterCrop(crop)}. */
    public TransformSpec withEval(int resize, int crop) {
        Copy c = new Copy(this);
        c.resize = resize;
        c.crop = crop;
        c.train = null;
        c.squash = false;
        return c.build();
    }

    /** {@link #evalRegion}: false decodes whole images for the evaluation transform (the same pixels). */
    public TransformSpec withEvalRegion(boolean evalRegion) {
        Copy c = new Copy(this);
        c.evalRegion = evalRegion;
        return c.build();
    }

    /** The resize's filter, for the evaluation and the training transform alike. */
    public TransformSpec withInterpolation(Interpolation interpolation) {
        Copy c = new Copy(this);
        c.interpolation = interpolation;
        return c.build();
    }

    /** torchvision's {@code RandomErasing} on each float32 sample, after the normalisation; null: none. */
    public TransformSpec withErasing(RandomErasing erasing) {
        Copy c = new Copy(this);
        c.erasing = erasing;
        return c.build();
    }

    /**
     * The training transform followed by an auto-augment policy ({@code AugmentPolicy}'s spelling,
     * e.g. {@code ta_wide:31}), or none for null.
     */
    public TransformSpec withAugment(String augment) {
        Copy c = new Copy(this);
        c.augment = augment;
        return c.build();
    }

    /**
     * The evaluation transform with both sides resized to {@code resize}, the aspect ratio not kept
     * (torchvision's {@code Resize((resize, resize))}), then {@code CenterCrop(crop)}.
     */
    public TransformSpec withSquash(int resize, int crop) {
        Copy c = new Copy(this);
        c.resize = resize;
        c.crop = crop;
        c.train = null;
        c.augment = null;
        c.squash = true;
        return c.build();
    }

    public boolean isTrain() {
        return train != null;
    }

    public int channels() {
        return 3;
    }

    public int elementSize() {
        return output == Output.FLOAT32_CHW ? 4 : 1;
    }

    public long sampleBytes() {
        return (long) crop * crop * channels() * elementSize();
    }

    /**
     * A spec's components to change before building another: each wither sets only what it changes,
     * and the canonical constructor checks the whole again.
     */
    private static final class Copy {
        private int resize;
        private int crop;
        private Output output;
        private float[] mean;
        private float[] std;
        private DctScaling dctScaling;
        private long maxPixels;
        private long maxFileBytes;
        private RandomResizedCrop train;
        private boolean evalRegion;
        private Interpolation interpolation;
        private RandomErasing erasing;
        private String augment;
        private boolean squash;

        Copy(TransformSpec s) {
            resize = s.resize;
            crop = s.crop;
            output = s.output;
            mean = s.mean;
            std = s.std;
            dctScaling = s.dctScaling;
            maxPixels = s.maxPixels;
            maxFileBytes = s.maxFileBytes;
            train = s.train;
            evalRegion = s.evalRegion;
            interpolation = s.interpolation;
            erasing = s.erasing;
            augment = s.augment;
            squash = s.squash;
        }

        TransformSpec build() {
            return new TransformSpec(
                    resize,
                    crop,
                    output,
                    mean,
                    std,
                    dctScaling,
                    maxPixels,
                    maxFileBytes,
                    train,
                    evalRegion,
                    interpolation,
                    erasing,
                    augment,
                    squash);
        }
    }
}
