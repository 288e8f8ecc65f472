package io.stoke.embed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.transform.TransformSpec;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The preprocessing a model's metadata declares is held against the run's flags: what
 * {@code onnx_export.py} writes for open_clip's ViT-B-32 (bicubic 224, CLIP's mean and std) passes
 * with the flags it names, and each flag that differs is refused by name. (The end-to-end check,
 * with open_clip's own export, is clients/python/tests/test_openclip_embed.py.)
 */
class ModelPreprocessTest {
    private static final Map<String, String> OPEN_CLIP = Map.of(
            "stoke.resize", "224",
            "stoke.crop", "224",
            "stoke.interpolation", "bicubic",
            "stoke.mean", "0.48145466,0.4578275,0.40821073",
            "stoke.std", "0.26862954,0.26130258,0.27577711",
            "stoke.source", "open_clip ViT-B-32");
    private static final float[] CLIP_MEAN = {0.48145466f, 0.4578275f, 0.40821073f};
    private static final float[] CLIP_STD = {0.26862954f, 0.26130258f, 0.27577711f};

    private static TransformSpec openClips() {
        return TransformSpec.defaults()
                .withResize(224, 224)
                .withInterpolation(TransformSpec.Interpolation.BICUBIC)
                .withNormalization(CLIP_MEAN, CLIP_STD);
    }

    @Test
    void theModelsOwnFlagsPass() {
        ModelPreprocess p = ModelPreprocess.of(OPEN_CLIP);
        assertTrue(p.declared());
        p.check(openClips(), true);
        // The model's mean and std in the exporter's digits (open_clip's), not float32's shortest.
        assertEquals(
                "--resize 224 --crop 224 --interpolation bicubic --mean 0.48145466,0.4578275,0.40821073"
                        + " --std 0.26862954,0.26130258,0.27577711",
                p.flags(true));
    }

    @Test
    void eachFlagThatDiffersIsRefusedByName() {
        ModelPreprocess p = ModelPreprocess.of(OPEN_CLIP);
        IllegalArgumentException bilinear = assertThrows(
                IllegalArgumentException.class,
                () -> p.check(openClips().withInterpolation(TransformSpec.Interpolation.BILINEAR), true));
        assertTrue(bilinear.getMessage().contains("this run has --interpolation bilinear:"), bilinear.getMessage());
        assertTrue(bilinear.getMessage().contains(p.flags(true)), bilinear.getMessage());
        IllegalArgumentException imagenet =
                assertThrows(IllegalArgumentException.class, () -> p.check(TransformSpec.defaults(), true));
        assertTrue(
                imagenet.getMessage()
                        .contains("this run has --resize 256 --interpolation bilinear --mean 0.485,0.456,0.406"
                                + " --std 0.229,0.224,0.225:"),
                imagenet.getMessage());
        // A uint8 model normalises in its graph: the run's mean and std are not its business.
        p.check(openClips().withNormalization(TransformSpec.IMAGENET_MEAN, TransformSpec.IMAGENET_STD), false);
    }

    @Test
    void aModelThatDeclaresNothingIsNotChecked() {
        assertEquals(ModelPreprocess.NONE, ModelPreprocess.of(Map.of("producer", "pytorch")));
        assertFalse(ModelPreprocess.NONE.declared());
        ModelPreprocess.NONE.check(TransformSpec.defaults(), true);
    }

    @Test
    void unreadableEntriesAreNamed() {
        IllegalArgumentException side =
                assertThrows(IllegalArgumentException.class, () -> ModelPreprocess.of(Map.of("stoke.crop", "big")));
        assertTrue(side.getMessage().contains("stoke.crop is 'big'"), side.getMessage());
        IllegalArgumentException filter = assertThrows(
                IllegalArgumentException.class, () -> ModelPreprocess.of(Map.of("stoke.interpolation", "lanczos")));
        assertTrue(filter.getMessage().contains("stoke.interpolation is 'lanczos'"), filter.getMessage());
        IllegalArgumentException mean =
                assertThrows(IllegalArgumentException.class, () -> ModelPreprocess.of(Map.of("stoke.mean", "0.5,0.5")));
        assertTrue(mean.getMessage().contains("stoke.mean is '0.5,0.5'"), mean.getMessage());
    }
}
