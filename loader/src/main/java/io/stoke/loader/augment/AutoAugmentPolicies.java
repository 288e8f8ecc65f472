package io.stoke.loader.augment;

/**
 * AutoAugment's sub-policies, as torchvision 0.29's {@code AutoAugment._get_policies} lists them
 * (v1 and v2 hold the same): 25 pairs of (op, probability, magnitude bin or -1).
 */
final class AutoAugmentPolicies {
    private AutoAugmentPolicies() {}

    /** One step of a sub-policy. */
    record Step(AugmentOp op, double probability, int bin) {}

    static Step[][] of(AugmentPolicy.Kind kind) {
        return switch (kind) {
            case AUTO_AUGMENT_IMAGENET -> IMAGENET;
            case AUTO_AUGMENT_CIFAR10 -> CIFAR10;
            case AUTO_AUGMENT_SVHN -> SVHN;
            default -> throw new IllegalArgumentException(kind + " is not AutoAugment");
        };
    }

    private static Step[] p(String op1, double p1, int m1, String op2, double p2, int m2) {
        return new Step[] {
            new Step(AugmentOp.ofTorchvisionName(op1), p1, m1), new Step(AugmentOp.ofTorchvisionName(op2), p2, m2)
        };
    }

    private static final int NONE = -1;

    private static final Step[][] IMAGENET = {
        p("Posterize", 0.4, 8, "Rotate", 0.6, 9),
        p("Solarize", 0.6, 5, "AutoContrast", 0.6, NONE),
        p("Equalize", 0.8, NONE, "Equalize", 0.6, NONE),
        p("Posterize", 0.6, 7, "Posterize", 0.6, 6),
        p("Equalize", 0.4, NONE, "Solarize", 0.2, 4),
        p("Equalize", 0.4, NONE, "Rotate", 0.8, 8),
        p("Solarize", 0.6, 3, "Equalize", 0.6, NONE),
        p("Posterize", 0.8, 5, "Equalize", 1.0, NONE),
        p("Rotate", 0.2, 3, "Solarize", 0.6, 8),
        p("Equalize", 0.6, NONE, "Posterize", 0.4, 6),
        p("Rotate", 0.8, 8, "Color", 0.4, 0),
        p("Rotate", 0.4, 9, "Equalize", 0.6, NONE),
        p("Equalize", 0.0, NONE, "Equalize", 0.8, NONE),
        p("Invert", 0.6, NONE, "Equalize", 1.0, NONE),
        p("Color", 0.6, 4, "Contrast", 1.0, 8),
        p("Rotate", 0.8, 8, "Color", 1.0, 2),
        p("Color", 0.8, 8, "Solarize", 0.8, 7),
        p("Sharpness", 0.4, 7, "Invert", 0.6, NONE),
        p("ShearX", 0.6, 5, "Equalize", 1.0, NONE),
        p("Color", 0.4, 0, "Equalize", 0.6, NONE),
        p("Equalize", 0.4, NONE, "Solarize", 0.2, 4),
        p("Solarize", 0.6, 5, "AutoContrast", 0.6, NONE),
        p("Invert", 0.6, NONE, "Equalize", 1.0, NONE),
        p("Color", 0.6, 4, "Contrast", 1.0, 8),
        p("Equalize", 0.8, NONE, "Equalize", 0.6, NONE),
    };

    private static final Step[][] CIFAR10 = {
        p("Invert", 0.1, NONE, "Contrast", 0.2, 6),
        p("Rotate", 0.7, 2, "TranslateX", 0.3, 9),
        p("Sharpness", 0.8, 1, "Sharpness", 0.9, 3),
        p("ShearY", 0.5, 8, "TranslateY", 0.7, 9),
        p("AutoContrast", 0.5, NONE, "Equalize", 0.9, NONE),
        p("ShearY", 0.2, 7, "Posterize", 0.3, 7),
        p("Color", 0.4, 3, "Brightness", 0.6, 7),
        p("Sharpness", 0.3, 9, "Brightness", 0.7, 9),
        p("Equalize", 0.6, NONE, "Equalize", 0.5, NONE),
        p("Contrast", 0.6, 7, "Sharpness", 0.6, 5),
        p("Color", 0.7, 7, "TranslateX", 0.5, 8),
        p("Equalize", 0.3, NONE, "AutoContrast", 0.4, NONE),
        p("TranslateY", 0.4, 3, "Sharpness", 0.2, 6),
        p("Brightness", 0.9, 6, "Color", 0.2, 8),
        p("Solarize", 0.5, 2, "Invert", 0.0, NONE),
        p("Equalize", 0.2, NONE, "AutoContrast", 0.6, NONE),
        p("Equalize", 0.2, NONE, "Equalize", 0.6, NONE),
        p("Color", 0.9, 9, "Equalize", 0.6, NONE),
        p("AutoContrast", 0.8, NONE, "Solarize", 0.2, 8),
        p("Brightness", 0.1, 3, "Color", 0.7, 0),
        p("Solarize", 0.4, 5, "AutoContrast", 0.9, NONE),
        p("TranslateY", 0.9, 9, "TranslateY", 0.7, 9),
        p("AutoContrast", 0.9, NONE, "Solarize", 0.8, 3),
        p("Equalize", 0.8, NONE, "Invert", 0.1, NONE),
        p("TranslateY", 0.7, 9, "AutoContrast", 0.9, NONE),
    };

    private static final Step[][] SVHN = {
        p("ShearX", 0.9, 4, "Invert", 0.2, NONE),
        p("ShearY", 0.9, 8, "Invert", 0.7, NONE),
        p("Equalize", 0.6, NONE, "Solarize", 0.6, 6),
        p("Invert", 0.9, NONE, "Equalize", 0.6, NONE),
        p("Equalize", 0.6, NONE, "Rotate", 0.9, 3),
        p("ShearX", 0.9, 4, "AutoContrast", 0.8, NONE),
        p("ShearY", 0.9, 8, "Invert", 0.4, NONE),
        p("ShearY", 0.9, 5, "Solarize", 0.2, 6),
        p("Invert", 0.9, NONE, "AutoContrast", 0.8, NONE),
        p("Equalize", 0.6, NONE, "Rotate", 0.9, 3),
        p("ShearX", 0.9, 4, "Solarize", 0.3, 3),
        p("ShearY", 0.8, 8, "Invert", 0.7, NONE),
        p("Equalize", 0.9, NONE, "TranslateY", 0.6, 6),
        p("Invert", 0.9, NONE, "Equalize", 0.6, NONE),
        p("Contrast", 0.3, 3, "Rotate", 0.8, 4),
        p("Invert", 0.8, NONE, "TranslateY", 0.0, 2),
        p("ShearY", 0.7, 6, "Solarize", 0.4, 8),
        p("Invert", 0.6, NONE, "Rotate", 0.8, 4),
        p("ShearY", 0.3, 7, "TranslateX", 0.9, 3),
        p("ShearX", 0.1, 6, "Invert", 0.6, NONE),
        p("Solarize", 0.7, 2, "TranslateY", 0.6, 7),
        p("ShearY", 0.8, 4, "Invert", 0.8, NONE),
        p("ShearX", 0.7, 9, "TranslateY", 0.8, 3),
        p("ShearY", 0.8, 5, "AutoContrast", 0.7, NONE),
        p("ShearX", 0.7, 2, "Invert", 0.1, NONE),
    };
}
