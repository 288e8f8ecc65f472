package io.stoke.loader.augment;

/**
 * The operations torchvision's auto-augment policies draw, by torchvision's names
 * ({@code transforms/autoaugment.py}'s {@code _apply_op}). The first six move pixels (PIL's affine
 * transform); the rest change their values. {@link #HUE} and {@link #GRAYSCALE} are ColorJitter's and RandomGrayscale's alone.
 */
public enum AugmentOp {
    IDENTITY("Identity"),
    SHEAR_X("ShearX"),
    SHEAR_Y("ShearY"),
    TRANSLATE_X("TranslateX"),
    TRANSLATE_Y("TranslateY"),
    ROTATE("Rotate"),
    BRIGHTNESS("Brightness"),
    COLOR("Color"),
    CONTRAST("Contrast"),
    SHARPNESS("Sharpness"),
    POSTERIZE("Posterize"),
    SOLARIZE("Solarize"),
    AUTO_CONTRAST("AutoContrast"),
    EQUALIZE("Equalize"),
    INVERT("Invert"),
    /** ColorJitter's hue shift (F.adjust_hue); no auto-augment policy draws it. */
    HUE("Hue"),
    /** RandomGrayscale's grey in three channels (F.rgb_to_grayscale(img, 3)), after ColorJitter. */
    GRAYSCALE("Grayscale");

    private final String torchvisionName;

    AugmentOp(String torchvisionName) {
        this.torchvisionName = torchvisionName;
    }

    /** The name torchvision gives it ({@code "ShearX"}). */
    public String torchvisionName() {
        return torchvisionName;
    }

    /** Whether it is one of PIL's affine transforms (shear, translate, rotate). */
    public boolean geometric() {
        return this == SHEAR_X || this == SHEAR_Y || this == TRANSLATE_X || this == TRANSLATE_Y || this == ROTATE;
    }

    /** The op torchvision names {@code name}. */
    public static AugmentOp ofTorchvisionName(String name) {
        for (AugmentOp op : values()) {
            if (op.torchvisionName.equals(name)) {
                return op;
            }
        }
        throw new IllegalArgumentException("no augmentation op named " + name);
    }
}
