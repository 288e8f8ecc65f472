package io.stoke.embed;

import io.stoke.loader.transform.TransformSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The preprocessing a model was exported for, as its exporter recorded it in the ONNX file's
 * metadata ({@code stoke.resize}, {@code stoke.crop}, {@code stoke.interpolation},
 * {@code stoke.mean}, {@code stoke.std}: the values of the flags of the same names;
 * {@code clients/python/stoke/onnx_export.py} writes them). The run's transform must be this one:
 * a model fed other pixels gives other embeddings without a sign, so a difference is refused,
 * naming the flags. A model without these entries declares nothing and is not checked.
 *
 * @param resize        the shorter side the image is resized to, or 0 when not declared
 * @param crop          the centre crop's side, or 0
 * @param interpolation the resize's filter, or null
 * @param mean          the normalisation's mean (float32 models) as the exporter spelled it
 *     ({@code R,G,B}: the message names the model's flags in its own digits), or null
 * @param std           the normalisation's std, the same way, or null
 */
public record ModelPreprocess(
        int resize, int crop, TransformSpec.Interpolation interpolation, String mean, String std) {
    /** The metadata keys' prefix. */
    public static final String PREFIX = "stoke.";

    /** A model that declares no preprocessing. */
    public static final ModelPreprocess NONE = new ModelPreprocess(0, 0, null, null, null);

    public ModelPreprocess {
        rgb("mean", mean);
        rgb("std", std);
    }

    /**
     * Reads the entries from a model's custom metadata (other keys are the exporter's business).
     *
     * @throws IllegalArgumentException naming the entry when one cannot be read
     */
    public static ModelPreprocess of(Map<String, String> metadata) {
        return new ModelPreprocess(
                side(metadata, "resize"),
                side(metadata, "crop"),
                interpolation(metadata),
                metadata.get(PREFIX + "mean"),
                metadata.get(PREFIX + "std"));
    }

    /** Whether the model declared anything. */
    public boolean declared() {
        return resize > 0 || crop > 0 || interpolation != null || mean != null || std != null;
    }

    /**
     * Refuses {@code spec} where it differs from what the model declared, naming the flags the model
     * needs; {@code normalised} says whether the model takes normalised float32 pixels (the mean and
     * std are the graph's own otherwise, and not compared).
     *
     * @throws IllegalArgumentException listing each difference and the flags to give
     */
    public void check(TransformSpec spec, boolean normalised) {
        List<String> differ = new ArrayList<>();
        if (resize > 0 && resize != spec.resize()) {
            differ.add("--resize " + spec.resize());
        }
        if (crop > 0 && crop != spec.crop()) {
            differ.add("--crop " + spec.crop());
        }
        if (interpolation != null && interpolation != spec.interpolation()) {
            differ.add("--interpolation " + name(spec.interpolation()));
        }
        if (normalised && mean != null && !Arrays.equals(rgb("mean", mean), spec.mean())) {
            differ.add("--mean " + join(spec.mean()));
        }
        if (normalised && std != null && !Arrays.equals(rgb("std", std), spec.std())) {
            differ.add("--std " + join(spec.std()));
        }
        if (!differ.isEmpty()) {
            throw new IllegalArgumentException("the model was exported for " + flags(normalised) + " (its metadata,"
                    + " stoke.*), this run has " + String.join(" ", differ)
                    + ": its embeddings would not be the model's own; give the model's flags");
        }
    }

    /** The flags that give this preprocessing, as a command line spells them. */
    public String flags(boolean normalised) {
        List<String> f = new ArrayList<>();
        if (resize > 0) {
            f.add("--resize " + resize);
        }
        if (crop > 0) {
            f.add("--crop " + crop);
        }
        if (interpolation != null) {
            f.add("--interpolation " + name(interpolation));
        }
        if (normalised && mean != null) {
            f.add("--mean " + mean.strip().replace(" ", ""));
        }
        if (normalised && std != null) {
            f.add("--std " + std.strip().replace(" ", ""));
        }
        return String.join(" ", f);
    }

    private static int side(Map<String, String> metadata, String key) {
        String v = metadata.get(PREFIX + key);
        if (v == null) {
            return 0;
        }
        try {
            int n = Integer.parseInt(v.strip());
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException(
                "the model's metadata " + PREFIX + key + " is '" + v + "', not a positive whole number");
    }

    private static TransformSpec.Interpolation interpolation(Map<String, String> metadata) {
        String v = metadata.get(PREFIX + "interpolation");
        if (v == null) {
            return null;
        }
        try {
            return TransformSpec.Interpolation.valueOf(v.strip().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the model's metadata " + PREFIX + "interpolation is '" + v
                    + "', not bilinear, bicubic or nearest");
        }
    }

    /** The three float32 values of {@code v}, the entry {@code key}'s text (null: none). */
    private static float[] rgb(String key, String v) {
        if (v == null) {
            return null;
        }
        String[] parts = v.split(",");
        if (parts.length == 3) {
            try {
                float[] values = new float[3];
                for (int i = 0; i < 3; i++) {
                    values[i] = Float.parseFloat(parts[i].strip());
                }
                return values;
            } catch (NumberFormatException e) {
                // below
            }
        }
        throw new IllegalArgumentException("the model's metadata " + PREFIX + key + " is '" + v
                + "', not three numbers separated by commas (R,G,B)");
    }

    private static String name(TransformSpec.Interpolation i) {
        return i.name().toLowerCase(Locale.ROOT);
    }

    /** The run's values as the flags take them: each float32 in its shortest spelling. */
    private static String join(float[] values) {
        StringBuilder b = new StringBuilder();
        for (float v : values) {
            b.append(b.isEmpty() ? "" : ",").append(v);
        }
        return b.toString();
    }

    @Override
    public String toString() {
        return declared() ? flags(true) : "none declared";
    }
}
