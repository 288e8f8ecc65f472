package io.stoke.loader.resample;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.PythonReference;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The training transform's pixels: a crop box resized, and flipped, as torchvision does on PIL. */
class TrainTransformTest {
    private static final TransformSpec TRAIN = TransformSpec.defaults().withTrain(64, RandomResizedCrop.defaults());

    private static byte[] resizedCrop(
            TransformSpec spec, byte[] rgb, int w, int h, CropBox box, ResampleKernels kernels) {
        byte[] src = ResamplerTest.rgbx(rgb);
        try (Arena arena = Arena.ofConfined();
                Resampler r = new Resampler(spec, kernels)) {
            MemorySegment in = arena.allocate(src.length);
            MemorySegment.copy(src, 0, in, JAVA_BYTE, 0, src.length);
            MemorySegment out = arena.allocate(spec.sampleBytes() + 16);
            out.fill((byte) 0x5A);
            r.resizedCrop(in, w, h, w, h, box, out, 8);
            assertEquals(0x5A, out.get(JAVA_BYTE, 7) & 0xFF, "wrote before its sample");
            assertEquals(0x5A, out.get(JAVA_BYTE, 8 + spec.sampleBytes()) & 0xFF, "wrote past its sample");
            return out.asSlice(8, spec.sampleBytes()).toArray(JAVA_BYTE);
        }
    }

    @ParameterizedTest(name = "{0}x{1}, box {4}x{5}+{2}+{3} -> {6}, flip {7}")
    @CsvSource({
        "500, 375, 37, 12, 301, 250, 224, false", // a downscale from inside the image
        "500, 375, 37, 12, 301, 250, 224, true",
        "500, 375, 0, 0, 500, 375, 64, false", // the whole image, squeezed
        "500, 375, 440, 300, 60, 75, 224, true", // an upscale at the bottom-right corner
        "333, 211, 1, 2, 17, 9, 40, false", // a tiny box, odd sizes
        "120, 1000, 0, 900, 120, 100, 96, true"
    }) // the bottom edge of a tall image
    void equalsTorchvisionsResizedCropAndFlipByteForByte(
            int w, int h, int left, int top, int bw, int bh, int size, boolean flip) throws Exception {
        byte[] rgb = TestImages.rgb(w, h, 11);
        CropBox box = new CropBox().set(left, top, bw, bh, flip);
        TransformSpec spec = TransformSpec.defaults().withTrain(size, RandomResizedCrop.defaults());
        byte[] expected = PythonReference.resizedCrop(rgb, w, h, left, top, bw, bh, size, flip);
        assertArrayEquals(
                expected,
                resizedCrop(spec, rgb, w, h, box, ResampleKernels.best()),
                "differs from torchvision's resized_crop" + (flip ? " + hflip" : "") + " on PIL");
        assertArrayEquals(expected, resizedCrop(spec, rgb, w, h, box, new ScalarKernels()), "scalar kernels");
        if (ResamplerTest.nativeOrSkipLoudly()) {
            assertArrayEquals(expected, resizedCrop(spec, rgb, w, h, box, new NativeKernels()), "native kernels");
        }
    }

    @ParameterizedTest(name = "{8}: {0}x{1}, box {4}x{5}+{2}+{3} -> {6}, flip {7}")
    @CsvSource({
        "500, 375, 37, 12, 301, 250, 224, false, bicubic", // a downscale from inside the image
        "500, 375, 37, 12, 301, 250, 224, true, bicubic",
        "500, 375, 440, 300, 60, 75, 224, true, bicubic", // an upscale at the bottom-right corner
        "333, 211, 1, 2, 17, 9, 40, false, bicubic", // a tiny box, odd sizes
        "1800, 300, 3, 7, 1700, 250, 96, true, bicubic", // 37 taps: one column at a time
        "500, 375, 37, 12, 301, 250, 224, false, nearest",
        "500, 375, 37, 12, 301, 250, 224, true, nearest",
        "500, 375, 440, 300, 60, 75, 224, true, nearest",
        "333, 211, 1, 2, 17, 9, 40, false, nearest",
        "120, 1000, 0, 900, 120, 100, 96, true, nearest"
    })
    void equalsTorchvisionsResizedCropWithEachInterpolation(
            int w, int h, int left, int top, int bw, int bh, int size, boolean flip, String mode) throws Exception {
        byte[] rgb = TestImages.rgb(w, h, 13);
        CropBox box = new CropBox().set(left, top, bw, bh, flip);
        TransformSpec spec = TransformSpec.defaults()
                .withTrain(size, RandomResizedCrop.defaults())
                .withInterpolation(TransformSpec.Interpolation.valueOf(mode.toUpperCase(java.util.Locale.ROOT)));
        byte[] expected = PythonReference.resizedCrop(rgb, w, h, left, top, bw, bh, size, flip, mode);
        assertArrayEquals(expected, resizedCrop(spec, rgb, w, h, box, new ScalarKernels()), "scalar kernels");
        if (ResamplerTest.nativeOrSkipLoudly()) {
            assertArrayEquals(expected, resizedCrop(spec, rgb, w, h, box, new NativeKernels()), "native kernels");
        }
    }

    @ParameterizedTest(name = "box {0} wide -> 224, flip {1}")
    @CsvSource({
        "150, false", // an upscale: each block's taps in one window of eight pixels
        "224, true",
        "260, false", // two windows
        "300, true",
        "400, false", // three windows
        "420, true",
        "520, false", // past three windows: gathers
        "1700, true" // past the gathers' taps: one column at a time
    })
    void nativeAndScalarKernelsGiveTheSameBytesAtEveryScaleAndFlip(int boxWidth, boolean flip) {
        Assumptions.assumeTrue(ResamplerTest.nativeOrSkipLoudly(), "Stoke's C library is not built here");
        int w = 1800;
        int h = 300;
        byte[] rgb = TestImages.rgb(w, h, boxWidth);
        TransformSpec spec = TransformSpec.defaults().withTrain(224, RandomResizedCrop.defaults());
        for (int left : new int[] {0, 3, w - boxWidth}) {
            CropBox box = new CropBox().set(left, 7, boxWidth, 250, flip);
            assertArrayEquals(
                    resizedCrop(spec, rgb, w, h, box, new ScalarKernels()),
                    resizedCrop(spec, rgb, w, h, box, new NativeKernels()),
                    "box at " + left);
        }
    }

    /**
     * Boxes downscaled by more than about 2.5, where the horizontal pass walks each column's taps
     * four pixels at a time (AVX-512) or gathers them (AVX2): noise, so a tap lost or a channel
     * crossed changes bytes; boxes whose last column's taps end at the row's last pixel, odd
     * widths, a tail of columns past the last block of eight, every count of rows modulo four.
     */
    @ParameterizedTest(name = "{8}: {0}x{1}, box {4}x{5}+{2}+{3} -> {6}, flip {7}")
    @CsvSource({
        "2000, 41, 0, 0, 2000, 41, 224, false, bilinear", // a photograph's crop: 18 taps a column
        "2000, 41, 0, 0, 2000, 41, 224, true, bicubic", // 36 taps, some weights negative
        "1501, 38, 1, 0, 1500, 38, 97, false, bicubic", // the last column's taps end at the row's end
        "1501, 39, 1, 0, 1500, 39, 97, true, bilinear",
        "1999, 44, 0, 4, 1999, 40, 223, false, bilinear", // a tail of seven columns
        "630, 43, 0, 0, 630, 43, 229, false, bilinear", // blocks of permutes and blocks past them, half each
        "515, 42, 3, 0, 510, 42, 229, true, bicubic",
        "4001, 37, 0, 0, 4001, 37, 31, false, bicubic" // hundreds of taps
    })
    void nativeAndScalarKernelsGiveTheSameBytesWithManyTaps(
            int w, int h, int left, int top, int bw, int bh, int size, boolean flip, String mode) {
        Assumptions.assumeTrue(ResamplerTest.nativeOrSkipLoudly(), "Stoke's C library is not built here");
        byte[] rgb = new byte[w * h * 3];
        new java.util.SplittableRandom(w * 31L + bw).nextBytes(rgb);
        CropBox box = new CropBox().set(left, top, bw, bh, flip);
        TransformSpec spec = TransformSpec.defaults()
                .withTrain(size, RandomResizedCrop.defaults())
                .withInterpolation(TransformSpec.Interpolation.valueOf(mode.toUpperCase(java.util.Locale.ROOT)));
        assertArrayEquals(
                resizedCrop(spec, rgb, w, h, box, new ScalarKernels()),
                resizedCrop(spec, rgb, w, h, box, new NativeKernels()),
                "native kernels differ from the scalar ones");
    }

    @Test
    void nativeAndScalarKernelsGiveTheSameBytesOnRandomBoxes() {
        Assumptions.assumeTrue(ResamplerTest.nativeOrSkipLoudly(), "Stoke's C library is not built here");
        int w = 640;
        int h = 200;
        byte[] rgb = TestImages.rgb(w, h, 21);
        java.util.SplittableRandom r = new java.util.SplittableRandom(38);
        for (int i = 0; i < 300; i++) {
            int size = 8 + r.nextInt(120);
            int bw = 1 + r.nextInt(w);
            int bh = 1 + r.nextInt(h);
            CropBox box = new CropBox().set(r.nextInt(w - bw + 1), r.nextInt(h - bh + 1), bw, bh, r.nextBoolean());
            TransformSpec spec = TransformSpec.defaults().withTrain(size, RandomResizedCrop.defaults());
            assertArrayEquals(
                    resizedCrop(spec, rgb, w, h, box, new ScalarKernels()),
                    resizedCrop(spec, rgb, w, h, box, new NativeKernels()),
                    "case " + i + ": box " + bw + "x" + bh + " -> " + size + (box.flip ? ", flipped" : ""));
        }
    }

    @Test
    void aFlipIsTheMirrorImage() {
        int w = 300;
        int h = 200;
        byte[] rgb = TestImages.rgb(w, h, 5);
        byte[] plain =
                resizedCrop(TRAIN, rgb, w, h, new CropBox().set(20, 10, 150, 170, false), ResampleKernels.best());
        byte[] flipped =
                resizedCrop(TRAIN, rgb, w, h, new CropBox().set(20, 10, 150, 170, true), ResampleKernels.best());
        int s = TRAIN.crop();
        for (int y = 0; y < s; y++) {
            for (int x = 0; x < s; x++) {
                for (int c = 0; c < 3; c++) {
                    assertEquals(
                            plain[(y * s + x) * 3 + c], flipped[(y * s + s - 1 - x) * 3 + c], "(" + x + ", " + y + ")");
                }
            }
        }
    }

    @Test
    void theEvalPathIsUnchangedByTheBoxArithmetic() {
        // The whole image as the box with Resize + CenterCrop geometry is the eval path: one
        // resampler switching between the two must give each its own bytes.
        int w = 500;
        int h = 375;
        byte[] rgb = TestImages.rgb(w, h, 9);
        TransformSpec eval = TransformSpec.defaults().withResize(72, 64);
        byte[] src = ResamplerTest.rgbx(rgb);
        try (Arena arena = Arena.ofConfined();
                Resampler fresh = new Resampler(eval);
                Resampler mixed = new Resampler(eval)) {
            MemorySegment in = arena.allocate(src.length);
            MemorySegment.copy(src, 0, in, JAVA_BYTE, 0, src.length);
            MemorySegment a = arena.allocate(eval.sampleBytes());
            MemorySegment b = arena.allocate(eval.sampleBytes());
            fresh.resizeCenterCrop(in, w, h, w, h, a, 0);
            mixed.resizedCrop(in, w, h, w, h, new CropBox().set(3, 4, 200, 100, true), b, 0);
            mixed.resizeCenterCrop(in, w, h, w, h, b, 0);
            assertArrayEquals(a.toArray(JAVA_BYTE), b.toArray(JAVA_BYTE));
        }
    }

    @Test
    void aBoxOutsideTheImageIsRefusedBeforeAnythingIsWritten() {
        byte[] rgb = TestImages.rgb(50, 40, 1);
        for (CropBox bad : new CropBox[] {
            new CropBox().set(-1, 0, 10, 10, false),
            new CropBox().set(45, 0, 10, 10, false),
            new CropBox().set(0, 35, 10, 10, false),
            new CropBox().set(0, 0, 0, 10, false)
        }) {
            assertThrows(
                    IllegalArgumentException.class,
                    () -> resizedCrop(TRAIN, rgb, 50, 40, bad, ResampleKernels.best()),
                    bad.toString());
        }
    }
}
