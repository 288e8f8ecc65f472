package io.stoke.loader.resample;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokePixels;
import io.stoke.loader.testing.PythonReference;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ResamplerTest {

    /**
     * Resize then center-crop computed from the definition, in doubles, with no intermediate
     * rounding: each output pixel is the triangle-filter average of the source, the filter
     * widened by the downscale factor (antialiasing), normalised over the taps inside the image.
     */
    static double[] reference(byte[] src, int w, int h, int size, int crop) {
        int ow = Resampler.resizedWidth(size, w, h);
        int oh = Resampler.resizedHeight(size, w, h);
        int left = Resampler.cropOffset(ow, crop);
        int top = Resampler.cropOffset(oh, crop);
        double[][] wx = weights(w, ow, left, crop);
        double[][] wy = weights(h, oh, top, crop);
        double[] out = new double[crop * crop * 3];
        for (int y = 0; y < crop; y++) {
            for (int x = 0; x < crop; x++) {
                for (int c = 0; c < 3; c++) {
                    double s = 0;
                    for (int sy = 0; sy < h; sy++) {
                        if (wy[y][sy] == 0) {
                            continue;
                        }
                        for (int sx = 0; sx < w; sx++) {
                            if (wx[x][sx] != 0) {
                                s += wy[y][sy] * wx[x][sx] * (src[(sy * w + sx) * 3 + c] & 0xFF);
                            }
                        }
                    }
                    out[(y * crop + x) * 3 + c] = s;
                }
            }
        }
        return out;
    }

    private static double[][] weights(int in, int out, int first, int count) {
        double scale = (double) in / out;
        double fs = Math.max(1, scale);
        double[][] wts = new double[count][in];
        for (int i = 0; i < count; i++) {
            double center = (first + i + 0.5) * scale;
            double total = 0;
            for (int x = 0; x < in; x++) {
                double d = Math.abs((x + 0.5 - center) / fs);
                wts[i][x] = d < 1 ? 1 - d : 0;
                total += wts[i][x];
            }
            for (int x = 0; x < in; x++) {
                wts[i][x] /= total;
            }
        }
        return wts;
    }

    static byte[] rgbx(byte[] rgb) {
        byte[] out = new byte[rgb.length / 3 * 4];
        for (int i = 0, j = 0; i < rgb.length; i += 3, j += 4) {
            out[j] = rgb[i];
            out[j + 1] = rgb[i + 1];
            out[j + 2] = rgb[i + 2];
            out[j + 3] = (byte) 0xFF;
        }
        return out;
    }

    private static byte[] run(TransformSpec spec, byte[] src, int w, int h) {
        return run(spec, src, w, h, ResampleKernels.best());
    }

    private static byte[] run(TransformSpec spec, byte[] rgb, int w, int h, ResampleKernels kernels) {
        return run(spec, rgb, w, h, kernels, true);
    }

    private static byte[] run(TransformSpec spec, byte[] rgb, int w, int h, ResampleKernels kernels, boolean identity) {
        byte[] src = rgbx(rgb);
        try (Arena arena = Arena.ofConfined();
                Resampler r = new Resampler(spec, kernels)) {
            r.identity = identity;
            // Exactly sized: the kernels must not read past the image even without slack.
            MemorySegment in = arena.allocate(src.length);
            MemorySegment.copy(src, 0, in, JAVA_BYTE, 0, src.length);
            MemorySegment out = arena.allocate(spec.sampleBytes() + 16);
            out.fill((byte) 0x5A);
            r.resizeCenterCrop(in, w, h, w, h, out, 8);
            // Nothing outside the sample's bytes was touched.
            assertEquals(0x5A, out.get(JAVA_BYTE, 7) & 0xFF);
            assertEquals(0x5A, out.get(JAVA_BYTE, 8 + spec.sampleBytes()) & 0xFF);
            return out.asSlice(8, spec.sampleBytes()).toArray(JAVA_BYTE);
        }
    }

    @ParameterizedTest(name = "{0}x{1} -> resize {2}, crop {3}")
    @CsvSource({
        "500, 375, 256, 224", // landscape downscale, ImageNet's typical size
        "375, 500, 256, 224", // portrait
        "333, 211, 64, 56", // odd sizes: crop offsets round half to even
        "90, 70, 128, 112", // upscale
        "1000, 120, 48, 40", // extreme aspect, strong downscale on one axis
        "256, 256, 256, 224", // no resize, crop only
    })
    void matchesTheDefinitionWithinOneLevel(int w, int h, int size, int crop) {
        byte[] src = TestImages.rgb(w, h, w * 31L + h);
        TransformSpec spec = TransformSpec.defaults().withResize(size, crop);
        byte[] got = run(spec, src, w, h);
        double[] ref = reference(src, w, h, size, crop);
        int maxDiff = 0;
        for (int i = 0; i < ref.length; i++) {
            int expect = (int) Math.max(0, Math.min(255, Math.round(ref[i])));
            maxDiff = Math.max(maxDiff, Math.abs((got[i] & 0xFF) - expect));
        }
        // PIL's two passes round to 8 bits in between; that costs at most one level.
        assertTrue(maxDiff <= 1, "max difference from the definition: " + maxDiff);
    }

    @ParameterizedTest(name = "{0}x{1} -> resize {2}, crop {3}")
    @CsvSource({"256, 341, 256, 224", "384, 256, 256, 224", "256, 256, 256, 224", "57, 40, 40, 33", "40, 40, 40, 40"})
    void aResizeToTheImagesOwnSizeIsSkippedAndGivesTheFiltersBytes(int w, int h, int size, int crop) {
        // A packed dataset's images already have the resize's size: the crop is copied, and must
        // equal what the filter gives at scale 1 (PIL returns a copy there too).
        byte[] src = TestImages.rgb(w, h, w * 13L + h);
        TransformSpec spec = TransformSpec.defaults().withResize(size, crop);
        TransformSpec f32 = spec.withOutput(TransformSpec.Output.FLOAT32_CHW);
        for (ResampleKernels k : new ResampleKernels[] {ResampleKernels.best(), new ScalarKernels()}) {
            assertArrayEquals(
                    run(spec, src, w, h, k, false),
                    run(spec, src, w, h, k, true),
                    k.getClass().getSimpleName());
            assertArrayEquals(
                    run(f32, src, w, h, k, false),
                    run(f32, src, w, h, k, true),
                    k.getClass().getSimpleName());
        }
        // and the crop itself, from the source's pixels
        byte[] got = run(spec, src, w, h, ResampleKernels.best(), true);
        int left = Resampler.cropOffset(w, crop);
        int top = Resampler.cropOffset(h, crop);
        for (int y = 0; y < crop; y += 7) {
            for (int x = 0; x < crop; x += 5) {
                for (int c = 0; c < 3; c++) {
                    assertEquals(src[3 * ((top + y) * w + left + x) + c], got[3 * (y * crop + x) + c]);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}x{1} -> resize {2}, crop {3}")
    @CsvSource({
        "500, 375, 256, 224",
        "375, 500, 256, 224",
        "333, 211, 64, 56",
        "90, 70, 128, 112",
        "1000, 120, 48, 40",
        "17, 1, 8, 8",
        "1, 1, 4, 4",
        "600, 450, 131, 129", // 129 columns: blocks of eight (AVX2 gathers) and one column after them
        "4000, 300, 32, 30", // 21 taps: past the gathers' limit, one column at a time
        "2000, 900, 100, 99"
    }) // 19 taps, 99 columns
    void nativeAndScalarKernelsGiveIdenticalBytes(int w, int h, int size, int crop) {
        Assumptions.assumeTrue(nativeOrSkipLoudly(), "Stoke's C library is not built here");
        byte[] src = TestImages.rgb(w, h, w * 7L + h);
        TransformSpec spec = TransformSpec.defaults().withResize(size, crop);
        TransformSpec f32 = spec.withOutput(TransformSpec.Output.FLOAT32_CHW);
        assertArrayEquals(run(spec, src, w, h, new ScalarKernels()), run(spec, src, w, h, new NativeKernels()));
        assertArrayEquals(run(f32, src, w, h, new ScalarKernels()), run(f32, src, w, h, new NativeKernels()));
    }

    /** Whether Stoke's C library loaded; says so on stderr when it did not (no gcc at build time). */
    static boolean nativeOrSkipLoudly() {
        if (!StokePixels.available()) {
            System.err.println("[stoke] NOT CHECKED: native kernels: " + StokePixels.unavailableReason());
            return false;
        }
        return true;
    }

    @Test
    void theBestKernelsAreNativeWhereTheLibraryLoadsElseTheScalarOnes() {
        Class<?> expected = StokePixels.available() ? NativeKernels.class : ScalarKernels.class;
        assertInstanceOf(expected, ResampleKernels.best());
    }

    @Test
    void oneResamplerOverImagesOfChangingSizesMatchesFreshOnes() {
        TransformSpec spec = TransformSpec.defaults();
        int[][] sizes = {{500, 375}, {375, 500}, {500, 375}, {500, 333}, {640, 480}, {500, 375}};
        try (Arena arena = Arena.ofConfined();
                Resampler reused = new Resampler(spec)) {
            MemorySegment out = arena.allocate(spec.sampleBytes());
            for (int[] wh : sizes) {
                byte[] rgbx = rgbx(TestImages.rgb(wh[0], wh[1], wh[0] + wh[1]));
                MemorySegment in = arena.allocate(rgbx.length);
                MemorySegment.copy(rgbx, 0, in, JAVA_BYTE, 0, rgbx.length);
                reused.resizeCenterCrop(in, wh[0], wh[1], wh[0], wh[1], out, 0);
                byte[] fresh = run(spec, TestImages.rgb(wh[0], wh[1], wh[0] + wh[1]), wh[0], wh[1]);
                assertArrayEquals(fresh, out.toArray(JAVA_BYTE), wh[0] + "x" + wh[1] + " after other sizes");
            }
        }
    }

    @Test
    void geometryIsTorchvisions() {
        assertEquals(341, Resampler.resizedWidth(256, 500, 375));
        assertEquals(256, Resampler.resizedHeight(256, 500, 375));
        assertEquals(256, Resampler.resizedWidth(256, 375, 500));
        assertEquals(341, Resampler.resizedHeight(256, 375, 500));
        assertEquals(58, Resampler.cropOffset(341, 224)); // 58.5 rounds half to even
        assertEquals(60, Resampler.cropOffset(345, 224)); // 60.5 rounds half to even
        assertEquals(16, Resampler.cropOffset(256, 224));
    }

    @Test
    void floatOutputIsTheNormalisedUint8Output() {
        int w = 200;
        int h = 150;
        byte[] src = TestImages.rgb(w, h, 3);
        TransformSpec u8 = TransformSpec.defaults().withResize(64, 56);
        TransformSpec f32 = u8.withOutput(TransformSpec.Output.FLOAT32_CHW);
        byte[] bytes = run(u8, src, w, h);
        byte[] floats = run(f32, src, w, h);
        MemorySegment fs = MemorySegment.ofArray(floats);
        int c = 56;
        for (int y = 0; y < c; y++) {
            for (int x = 0; x < c; x++) {
                for (int ch = 0; ch < 3; ch++) {
                    float expect = ((bytes[(y * c + x) * 3 + ch] & 0xFF) / 255f - u8.mean()[ch]) / u8.std()[ch];
                    float got = fs.get(
                            JAVA_FLOAT.withOrder(ByteOrder.nativeOrder()).withByteAlignment(1),
                            4L * ((long) ch * c * c + (long) y * c + x));
                    assertEquals(expect, got, 1e-6f);
                }
            }
        }
    }

    @Test
    void identicalToTorchvisionPipeline() throws Exception {
        int w = 500;
        int h = 375;
        byte[] src = TestImages.rgb(w, h, 99);
        byte[] expected = PythonReference.resizeCrop(src, w, h, 256, 224);
        byte[] got = run(TransformSpec.defaults(), src, w, h);
        assertArrayEquals(expected, got, "differs from torchvision Resize(256) + CenterCrop(224) on PIL");
    }

    @ParameterizedTest(name = "{4}: {0}x{1} -> resize {2}, crop {3}")
    @CsvSource({
        "500, 375, 256, 224, bicubic", // ImageNet's typical downscale: 5 taps
        "375, 500, 232, 224, bicubic", // the recipes' bicubic eval, Resize(232) + CenterCrop(224)
        "333, 211, 64, 56, bicubic", // odd sizes, 14 taps: the AVX2 gathers
        "90, 70, 128, 112, bicubic", // upscale: overshoot past 0 and 255, clipped
        "4000, 300, 32, 30, bicubic", // 253 taps a column: past the gathers, one column at a time
        "500, 375, 256, 224, nearest",
        "375, 500, 232, 224, nearest",
        "333, 211, 64, 56, nearest", // steps of 211/64: the sum's rounding decides some pixels
        "90, 70, 128, 112, nearest",
        "1000, 120, 48, 40, nearest"
    })
    void identicalToTorchvisionsResizeAndCenterCropWithEachInterpolation(int w, int h, int size, int crop, String mode)
            throws Exception {
        byte[] src = TestImages.rgb(w, h, w * 17L + h);
        byte[] expected = PythonReference.resizeCrop(src, w, h, size, crop, mode);
        TransformSpec spec = TransformSpec.defaults()
                .withResize(size, crop)
                .withInterpolation(TransformSpec.Interpolation.valueOf(mode.toUpperCase(java.util.Locale.ROOT)));
        List<ResampleKernels> kernels = new ArrayList<>(List.of(new ScalarKernels()));
        if (nativeOrSkipLoudly()) {
            kernels.add(new NativeKernels());
        }
        for (ResampleKernels k : kernels) {
            assertArrayEquals(
                    expected,
                    run(spec, src, w, h, k),
                    k.getClass().getSimpleName() + " differs from torchvision Resize(" + size + ", " + mode
                            + ") + CenterCrop(" + crop + ") on PIL");
        }
    }

    /**
     * timm's {@code crop_mode="squash"} and open_clip's {@code resize_mode="squash"}: torchvision's
     * {@code Resize((s, s))} (both sides to s, the ratio not kept) then {@code CenterCrop(c)}, on PIL.
     */
    @ParameterizedTest(name = "{0}x{1} -> squash {2}, crop {3}, {4}")
    @CsvSource({
        "500, 375, 235, 224, bicubic", // timm's crop_pct 0.95 at 224, wide
        "375, 500, 224, 224, bicubic", // open_clip's: no crop, tall
        "90, 70, 256, 224, bicubic", // upscale both ways
        "1000, 120, 48, 40, bilinear", // downscale 21x across, 2.5x down
        "333, 211, 64, 56, nearest"
    })
    void aSquashIsPilsResizeToASquareThenACenterCrop(int w, int h, int size, int crop, String mode) throws Exception {
        byte[] src = TestImages.rgb(w, h, w * 29L + h);
        byte[] expected = centerCrop(PythonReference.resize(src, w, h, size, size, mode), size, size, crop);
        TransformSpec spec = TransformSpec.defaults()
                .withSquash(size, crop)
                .withInterpolation(TransformSpec.Interpolation.valueOf(mode.toUpperCase(java.util.Locale.ROOT)));
        List<ResampleKernels> kernels = new ArrayList<>(List.of(new ScalarKernels()));
        if (nativeOrSkipLoudly()) {
            kernels.add(new NativeKernels());
        }
        for (ResampleKernels k : kernels) {
            assertArrayEquals(
                    expected,
                    run(spec, src, w, h, k),
                    k.getClass().getSimpleName() + " differs from torchvision Resize((" + size + ", " + size + "), "
                            + mode + ") + CenterCrop(" + crop + ") on PIL");
        }
    }

    /** {@link Resampler#resize} of an RGB image into an exactly sized segment, guard bytes checked. */
    private static byte[] resize(Resampler r, byte[] rgb, int w, int h, int ow, int oh) {
        byte[] src = rgbx(rgb);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(src.length);
            MemorySegment.copy(src, 0, in, JAVA_BYTE, 0, src.length);
            long bytes = 3L * ow * oh;
            MemorySegment out = arena.allocate(bytes + 16);
            out.fill((byte) 0x5A);
            r.resize(in, w, h, ow, oh, out, 8);
            assertEquals(0x5A, out.get(JAVA_BYTE, 7) & 0xFF);
            assertEquals(0x5A, out.get(JAVA_BYTE, 8 + bytes) & 0xFF);
            return out.asSlice(8, bytes).toArray(JAVA_BYTE);
        }
    }

    private static byte[] centerCrop(byte[] rgb, int w, int h, int crop) {
        int left = Resampler.cropOffset(w, crop);
        int top = Resampler.cropOffset(h, crop);
        byte[] out = new byte[crop * crop * 3];
        for (int y = 0; y < crop; y++) {
            System.arraycopy(rgb, ((top + y) * w + left) * 3, out, y * crop * 3, crop * 3);
        }
        return out;
    }

    @ParameterizedTest(name = "{0}x{1} -> resize {2}, crop {3}")
    @CsvSource({
        "500, 375, 256, 224",
        "375, 500, 256, 224",
        "333, 211, 64, 56",
        "90, 70, 128, 112",
        "1000, 120, 48, 40",
        "256, 256, 256, 224"
    })
    void aPlainResizeThenACenterCropIsResizeCrop(int w, int h, int size, int crop) {
        byte[] src = TestImages.rgb(w, h, w * 13L + h);
        TransformSpec spec = TransformSpec.defaults().withResize(size, crop);
        int ow = Resampler.resizedWidth(size, w, h);
        int oh = Resampler.resizedHeight(size, w, h);
        byte[] expected = run(spec, src, w, h);
        // One resampler for both paths, in turn: coefficients kept for one must not leak into the other.
        try (Resampler r = new Resampler(spec)) {
            byte[] rgb = TestImages.rgb(w, h, w * 13L + h);
            byte[] src4 = rgbx(rgb);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment in = arena.allocate(src4.length);
                MemorySegment.copy(src4, 0, in, JAVA_BYTE, 0, src4.length);
                MemorySegment out = arena.allocate(spec.sampleBytes());
                r.resizeCenterCrop(in, w, h, w, h, out, 0);
                assertArrayEquals(expected, out.toArray(JAVA_BYTE));
                byte[] full = resize(r, rgb, w, h, ow, oh);
                assertArrayEquals(
                        expected, centerCrop(full, ow, oh, crop), "resize to " + ow + "x" + oh + " then crop");
                r.resizeCenterCrop(in, w, h, w, h, out, 0);
                assertArrayEquals(expected, out.toArray(JAVA_BYTE), "resizeCenterCrop after a plain resize");
            }
        }
    }

    @ParameterizedTest(name = "{0}x{1} -> {2}x{3}")
    @CsvSource({
        "500, 375, 341, 256",
        "375, 500, 256, 341",
        "640, 480, 200, 150",
        "90, 70, 181, 140",
        "1000, 120, 37, 300",
        "333, 211, 333, 211",
        "17, 1, 5, 3"
    })
    void aPlainResizeIsPilsBilinearResize(int w, int h, int ow, int oh) throws Exception {
        byte[] src = TestImages.rgb(w, h, w * 5L + h);
        byte[] expected = PythonReference.resize(src, w, h, ow, oh);
        try (Resampler r = new Resampler(TransformSpec.defaults())) {
            assertArrayEquals(
                    expected,
                    resize(r, src, w, h, ow, oh),
                    "differs from PIL's resize((" + ow + ", " + oh + "), BILINEAR, reducing_gap=None)");
        }
    }

    @ParameterizedTest(name = "{4}: {0}x{1} -> {2}x{3}")
    @CsvSource({
        "500, 375, 341, 256, bicubic",
        "90, 70, 181, 140, bicubic",
        "1000, 120, 37, 300, bicubic", // down on one axis, up on the other
        "17, 1, 5, 3, bicubic",
        "500, 375, 341, 256, nearest",
        "90, 70, 181, 140, nearest",
        "1000, 120, 37, 300, nearest",
        "17, 1, 5, 3, nearest",
        "7, 5, 3, 3, nearest"
    })
    void aPlainResizeIsPilsResizeWithEachInterpolation(int w, int h, int ow, int oh, String mode) throws Exception {
        byte[] src = TestImages.rgb(w, h, w * 5L + h);
        byte[] expected = PythonReference.resize(src, w, h, ow, oh, mode);
        TransformSpec spec = TransformSpec.defaults()
                .withInterpolation(TransformSpec.Interpolation.valueOf(mode.toUpperCase(java.util.Locale.ROOT)));
        try (Resampler r = new Resampler(spec)) {
            assertArrayEquals(
                    expected,
                    resize(r, src, w, h, ow, oh),
                    "differs from PIL's resize((" + ow + ", " + oh + "), " + mode + ", reducing_gap=None)");
        }
    }

    @ParameterizedTest(name = "{0}x{1} -> {2}x{3}")
    @CsvSource({"500, 375, 341, 256", "90, 70, 181, 140", "1000, 120, 37, 300", "1, 1, 3, 2"})
    void aPlainResizeGivesTheSameBytesWithNativeAndScalarKernels(int w, int h, int ow, int oh) {
        Assumptions.assumeTrue(nativeOrSkipLoudly(), "Stoke's C library is not built here");
        byte[] src = TestImages.rgb(w, h, w * 3L + h);
        TransformSpec f32 = TransformSpec.defaults().withOutput(TransformSpec.Output.FLOAT32_CHW);
        try (Resampler scalar = new Resampler(f32, new ScalarKernels());
                Resampler c = new Resampler(f32, new NativeKernels())) {
            // uint8 RGB whatever the spec's output type.
            assertArrayEquals(resize(scalar, src, w, h, ow, oh), resize(c, src, w, h, ow, oh));
        }
    }

    @ParameterizedTest(name = "{0} bytes a pixel, {1}x{2}, rows {3} bytes apart from {4}")
    @CsvSource({"4, 224, 224, 1200, 40", "3, 224, 224, 672, 0", "3, 7, 5, 30, 3", "4, 1, 1, 4, 0", "4, 33, 17, 4000, 12"
    })
    void storingWithoutAResizeDropsXOrNormalisesTheSameWithNativeAndScalarKernels(
            int pixelBytes, int w, int h, int rowBytes, int from) {
        byte[] bytes = TestImages.rgb(rowBytes / 3 + 2, h + 1, 31L * w + h);
        float[] table = new float[3 * 256];
        for (int i = 0; i < table.length; i++) {
            table[i] = (i % 256) / 255f - i / 256;
        }
        List<ResampleKernels> kernels = new ArrayList<>(List.of(new ScalarKernels()));
        if (nativeOrSkipLoudly()) {
            kernels.add(new NativeKernels());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(from + (long) rowBytes * h);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, src, 0, src.byteSize());
            for (ResampleKernels k : kernels) {
                MemorySegment rgb = arena.allocate(5 + 3L * w * h);
                MemorySegment f32 = arena.allocate(8 + 12L * w * h);
                k.store(src, from, rowBytes, pixelBytes, w, h, null, rgb, 5);
                k.store(src, from, rowBytes, pixelBytes, w, h, table, f32, 8);
                for (int y = 0; y < h; y++) {
                    for (int x = 0; x < w; x++) {
                        for (int c = 0; c < 3; c++) {
                            int v = src.get(JAVA_BYTE, from + (long) rowBytes * y + (long) pixelBytes * x + c) & 0xFF;
                            String where = k.getClass().getSimpleName() + " pixel " + x + "," + y + " channel " + c;
                            assertEquals(v, rgb.get(JAVA_BYTE, 5 + 3L * (w * y + x) + c) & 0xFF, where);
                            assertEquals(
                                    v / 255f - c,
                                    f32.get(
                                            JAVA_FLOAT.withByteAlignment(1),
                                            8 + 4L * ((long) c * w * h + (long) w * y + x)),
                                    where);
                        }
                    }
                }
            }
        }
    }

    @Test
    void storingWithoutAResizeRefusesExtentsOutsideEitherSegment() {
        List<ResampleKernels> kernels = new ArrayList<>(List.of(new ScalarKernels()));
        if (nativeOrSkipLoudly()) {
            kernels.add(new NativeKernels());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(4 * 10 * 10);
            MemorySegment out = arena.allocate(3 * 10 * 10);
            float[] table = new float[768];
            for (ResampleKernels k : kernels) {
                assertThrows(IndexOutOfBoundsException.class, () -> k.store(src, 4, 40, 4, 10, 10, null, out, 0));
                assertThrows(IndexOutOfBoundsException.class, () -> k.store(src, 0, 40, 4, 10, 10, null, out, 1));
                assertThrows(IndexOutOfBoundsException.class, () -> k.store(src, 0, 40, 4, 10, 10, table, out, 0));
                assertThrows(
                        IndexOutOfBoundsException.class,
                        () -> k.store(src, 0, 40, 4, 10, 10, new float[700], arena.allocate(12 * 100), 0));
                assertThrows(IllegalArgumentException.class, () -> k.store(src, 0, 30, 4, 10, 10, null, out, 0));
                assertThrows(IllegalArgumentException.class, () -> k.store(src, 0, 40, 2, 10, 10, null, out, 0));
                k.store(src, 0, 40, 4, 10, 10, null, out, 0);
            }
        }
    }

    @Test
    void aPlainResizeRefusesAnOutputThatDoesNotFit() {
        try (Arena arena = Arena.ofConfined();
                Resampler r = new Resampler(TransformSpec.defaults())) {
            MemorySegment in = arena.allocate(64 * 64 * 4);
            MemorySegment out = arena.allocate(3 * 40 * 30);
            assertThrows(IndexOutOfBoundsException.class, () -> r.resize(in, 64, 64, 40, 30, out, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> r.resize(in, 64, 65, 40, 30, out, 0));
            assertThrows(IllegalArgumentException.class, () -> r.resize(in, 64, 64, 0, 30, out, 0));
            r.resize(in, 64, 64, 40, 30, out, 0);
        }
    }

    @Test
    void refusesAnOutputThatDoesNotFit() {
        TransformSpec spec = TransformSpec.defaults().withResize(32, 32);
        try (Arena arena = Arena.ofConfined();
                Resampler r = new Resampler(spec)) {
            MemorySegment in = arena.allocate(64 * 64 * 4);
            MemorySegment out = arena.allocate(spec.sampleBytes());
            assertThrows(IndexOutOfBoundsException.class, () -> r.resizeCenterCrop(in, 64, 64, 64, 64, out, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> r.resizeCenterCrop(in, 65, 64, 65, 64, out, 0));
        }
    }
}
