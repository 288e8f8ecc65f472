package io.stoke.loader.augment;

import java.lang.foreign.MemorySegment;

/**
 * The policies' geometric ops (ShearX/Y, TranslateX/Y, Rotate: PIL's affine transform), as
 * torchvision's {@code _apply_op} calls {@code F.affine} and {@code F.rotate} on a PIL image. They
 * are not built yet: a policy that draws them is refused at construction, naming them.
 */
final class GeometricOps {
    private GeometricOps() {}

    /** Why the geometric ops cannot run, in one sentence, or null where they can. */
    static String unavailable() {
        return "its geometric ops (ShearX, ShearY, TranslateX, TranslateY, Rotate: PIL's affine transform)"
                + " are not built into Stoke yet";
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
        throw new IllegalStateException(op.torchvisionName() + ": " + unavailable());
    }
}
