package io.stoke.pack;

import io.stoke.loader.resample.Resampler;
import java.util.Locale;

/**
 * What a pack's shards hold, and so what must match for a second run to resume a first: the
 * format, the geometry, the JPEG quality and where shards are cut. (Workers and the error
 * policy change how a pack is made, not its bytes, so they are not here.)
 *
 * @param format    {@link Format#JPEG}: resized JPEGs; {@link Format#PNG}: resized lossless PNGs;
 *     {@link Format#RAW}: the evaluation transform's uint8 pixels
 * @param resize    JPEG and PNG: the shorter side's target (0 with {@code maxSide}); RAW: torchvision's {@code Resize(resize)}
 * @param maxSide   JPEG and PNG: the longer side's limit instead of {@code resize} (0 = unused)
 * @param quality   JPEG only: libjpeg-turbo's quality, 1..100 (0 for RAW)
 * @param restartMcus JPEG only: the restart interval aimed at, in MCUs (0: no restart markers, and for RAW);
 *     each image's is {@link #restartInterval(int)}
 * @param crop      RAW only: torchvision's {@code CenterCrop(crop)} (0 for JPEG)
 * @param shardSize a new shard starts before a sample that would take the current one past this many bytes
 */
public record PackOptions(
        Format format, int resize, int maxSide, int quality, int restartMcus, int crop, long shardSize) {
    /**
     * The restart interval {@code stoke pack} aims at: 4 MCUs (64 pixels of a 4:2:0 row), so that the
     * region decoder can skip the columns left and right of a crop as well as the rows above it. What
     * the markers cost in bytes, and why 4: docs/benchmarks/README.md ("Restart markers") and
     * docs/benchmarks/pixels.md ("The interval").
     */
    public static final int DEFAULT_RESTART_MCUS = 4;

    /** What each sample is stored as. */
    public enum Format {
        /** {@code KEY.jpg}: re-encoded after a resize, or the original file when it is small enough already. */
        JPEG,
        /** {@code KEY.npy}: uint8 {@code (crop, crop, 3)}, the pixels {@code stoke bench} delivers. */
        RAW,
        /**
         * {@code KEY.png}: lossless, 8-bit RGB, re-encoded after a resize; a PNG small enough already is
         * kept byte for byte, and any other image that small is stored at its own size.
         */
        PNG,
        /**
         * {@code --keep-pixels}: every image's decoded pixels as they are. A JPEG is rewritten
         * losslessly with restart markers (the same coefficients: {@code KEY.jpg}), or kept byte for
         * byte where it cannot be or seeks already; any other image is stored as it is
         * ({@code KEY.png}, {@code KEY.webp}, ...).
         */
        ORIGINAL;

        /** The member's extension (an ORIGINAL pack's JPEGs'; its other images keep their own). */
        public String extension() {
            return switch (this) {
                case JPEG, ORIGINAL -> "jpg";
                case RAW -> "npy";
                case PNG -> "png";
            };
        }

        /** Whether the images are resized and re-encoded (JPEG, PNG) rather than stored as pixels (RAW) or kept (ORIGINAL). */
        public boolean encoded() {
            return this == JPEG || this == PNG;
        }

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public PackOptions {
        if (format == null) {
            throw new IllegalArgumentException("a pack needs a format");
        }
        if (shardSize < 1) {
            throw new IllegalArgumentException("--shard-size must be positive, not " + shardSize);
        }
        if (format == Format.JPEG) {
            if ((resize > 0) == (maxSide > 0) || resize < 0 || maxSide < 0) {
                throw new IllegalArgumentException(
                        "--format jpeg takes one positive target: --resize S or --max-side N");
            }
            if (quality < 1 || quality > 100) {
                throw new IllegalArgumentException("--quality must be in 1..100, not " + quality);
            }
            if (crop != 0) {
                throw new IllegalArgumentException("--crop applies to --format raw only");
            }
            if (restartMcus < 0 || restartMcus > 65535) {
                throw new IllegalArgumentException("--restart-interval must be in 0..65535 MCUs, not " + restartMcus);
            }
        } else if (format == Format.PNG) {
            if ((resize > 0) == (maxSide > 0) || resize < 0 || maxSide < 0) {
                throw new IllegalArgumentException(
                        "--format png takes one positive target: --resize S or --max-side N");
            }
            if (quality != 0 || restartMcus != 0 || crop != 0) {
                throw new IllegalArgumentException(
                        "--quality and restart markers apply to --format jpeg only, --crop to --format raw only");
            }
        } else if (format == Format.ORIGINAL) {
            if (resize != 0 || maxSide != 0 || quality != 0 || crop != 0) {
                throw new IllegalArgumentException(
                        "--keep-pixels keeps every image as it is: no --resize, --max-side, --quality or --crop");
            }
            if (restartMcus < 1 || restartMcus > 65535) {
                throw new IllegalArgumentException(
                        "--keep-pixels writes restart markers: --restart-interval must be in 1..65535 MCUs, not "
                                + restartMcus);
            }
        } else {
            if (crop < 1 || crop > resize || resize > 16384) {
                throw new IllegalArgumentException(
                        "--format raw needs 1 <= --crop <= --resize, not crop " + crop + ", resize " + resize);
            }
            if (maxSide != 0 || quality != 0 || restartMcus != 0) {
                throw new IllegalArgumentException(
                        "--max-side, --quality and restart markers apply to --format jpeg only");
            }
        }
    }

    /** Resized JPEGs whose shorter side is {@code resize}, at {@code quality}, with restart markers. */
    public static PackOptions jpegShorterSide(int resize, int quality, long shardSize) {
        return new PackOptions(Format.JPEG, resize, 0, quality, DEFAULT_RESTART_MCUS, 0, shardSize);
    }

    /** Resized JPEGs whose longer side is at most {@code maxSide}, at {@code quality}, with restart markers. */
    public static PackOptions jpegLongerSide(int maxSide, int quality, long shardSize) {
        return new PackOptions(Format.JPEG, 0, maxSide, quality, DEFAULT_RESTART_MCUS, 0, shardSize);
    }

    /** Resized lossless PNGs whose shorter side is {@code resize}. */
    public static PackOptions pngShorterSide(int resize, long shardSize) {
        return new PackOptions(Format.PNG, resize, 0, 0, 0, 0, shardSize);
    }

    /** Resized lossless PNGs whose longer side is at most {@code maxSide}. */
    public static PackOptions pngLongerSide(int maxSide, long shardSize) {
        return new PackOptions(Format.PNG, 0, maxSide, 0, 0, 0, shardSize);
    }

    /** The evaluation transform's uint8 pixels, {@code Resize(resize)} then {@code CenterCrop(crop)}. */
    public static PackOptions raw(int resize, int crop, long shardSize) {
        return new PackOptions(Format.RAW, resize, 0, 0, 0, crop, shardSize);
    }

    /** {@code --keep-pixels}: every image's pixels kept, JPEGs given restart markers losslessly. */
    public static PackOptions keepPixels(int restartMcus, long shardSize) {
        return new PackOptions(Format.ORIGINAL, 0, 0, 0, restartMcus, 0, shardSize);
    }

    /** These options with restart markers aimed at every {@code mcus} MCUs (0: none). */
    public PackOptions withRestartInterval(int mcus) {
        return new PackOptions(format, resize, maxSide, quality, mcus, crop, shardSize);
    }

    /**
     * The restart interval of an image {@code width} pixels wide, in MCUs (16 pixels at 4:2:0): the
     * divisor of its MCUs per row nearest {@link #restartMcus()} (the larger of two as near), so
     * that every row holds whole segments and a decoder can skip columns as well as rows. 0 when
     * the pack writes no restart markers.
     */
    public int restartInterval(int width) {
        if (restartMcus == 0) {
            return 0;
        }
        int perRow = (width + 15) / 16;
        int best = perRow;
        for (int d = 1; d <= perRow; d++) {
            if (perRow % d == 0 && Math.abs(d - restartMcus) <= Math.abs(best - restartMcus)) {
                best = d;
            }
        }
        return best;
    }

    /** JPEG and PNG: whether a {@code w x h} image is resized (never up: one at or below the target is kept as it is). */
    public boolean resizes(int w, int h) {
        return maxSide > 0 ? Math.max(w, h) > maxSide : Math.min(w, h) > resize;
    }

    /** JPEG and PNG: the stored width of a {@code w x h} image that {@link #resizes}: torchvision's {@code Resize} geometry. */
    public int targetWidth(int w, int h) {
        if (maxSide > 0) {
            return w >= h ? maxSide : Math.max(1, (int) ((double) maxSide * w / h));
        }
        return Resampler.resizedWidth(resize, w, h);
    }

    /** JPEG and PNG: the stored height; see {@link #targetWidth}. */
    public int targetHeight(int w, int h) {
        if (maxSide > 0) {
            return h > w ? maxSide : Math.max(1, (int) ((double) maxSide * h / w));
        }
        return Resampler.resizedHeight(resize, w, h);
    }

    /** The options in words, for messages. */
    public String describe() {
        return switch (format) {
            case JPEG ->
                "--format jpeg " + (maxSide > 0 ? "--max-side " + maxSide : "--resize " + resize) + " --quality "
                        + quality
                        + (restartMcus > 0 ? " --restart-interval " + restartMcus : " --no-restart-markers")
                        + " --shard-size " + shardSize;
            case PNG ->
                "--format png " + (maxSide > 0 ? "--max-side " + maxSide : "--resize " + resize) + " --shard-size "
                        + shardSize;
            case RAW -> "--format raw --resize " + resize + " --crop " + crop + " --shard-size " + shardSize;
            case ORIGINAL -> "--keep-pixels --restart-interval " + restartMcus + " --shard-size " + shardSize;
        };
    }
}
