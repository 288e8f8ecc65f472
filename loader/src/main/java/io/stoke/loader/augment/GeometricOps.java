package io.stoke.loader.augment;

import java.lang.foreign.MemorySegment;

/**
 * The policies' geometric ops (ShearX/Y, TranslateX/Y, Rotate), as torchvision's {@code _apply_op}
 * calls {@code F.affine} and {@code F.rotate} on a PIL image: {@link AffineOps} on the stage's
 * packed RGB images. Where their C code is not built, a policy that draws them is refused at
 * construction, naming why.
 */
final class GeometricOps {
    private GeometricOps() {}

    /** Why the geometric ops cannot run, in one sentence, or null where they can. */
    static String unavailable() {
        return AffineOps.available() ? null : "its geometric ops cannot run: " + AffineOps.unavailableReason();
    }

    /** torchvision's {@code _apply_op} for a geometric op, {@code src} into {@code dst}. */
    static void apply(
            AugmentOp op,
            MemorySegment src,
            MemorySegment dst,
            int width,
            int height,
            double magnitude,
            int interpolation,
            int[] fill) {
        long row = 3L * width;
        switch (op) {
            case SHEAR_X -> AffineOps.shearX(src, dst, width, height, row, magnitude, interpolation, fill);
            case SHEAR_Y -> AffineOps.shearY(src, dst, width, height, row, magnitude, interpolation, fill);
            case TRANSLATE_X -> AffineOps.translateX(src, dst, width, height, row, magnitude, interpolation, fill);
            case TRANSLATE_Y -> AffineOps.translateY(src, dst, width, height, row, magnitude, interpolation, fill);
            case ROTATE -> AffineOps.rotate(src, dst, width, height, row, magnitude, interpolation, fill);
            default -> throw new IllegalArgumentException(op + " is not geometric");
        }
    }
}
