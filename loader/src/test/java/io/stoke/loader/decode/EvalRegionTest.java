package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.StokeJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The evaluation transform decodes only the region of the image that the centre crop's filter
 * reads. Its bytes must be those of the whole image decoded at the same DCT scale and resized then
 * cropped ({@link JpegDecoder#decodePixels} + {@link Resampler#resizeCenterCrop}, which {@code
 * ResamplerTest} holds to PIL's), for every JPEG kind, orientation, odd size and DCT scale.
 */
class EvalRegionTest {
    @TempDir
    Path tmp;

    @ParameterizedTest(name = "{0}x{1}, {2} channels, subsampling {3}, flags {4}, {5}, {6}")
    @CsvSource({
        "500, 375, 3, 2, 0, NONE, UINT8_HWC", // 4:2:0 landscape, the median ImageNet photograph
        "375, 500, 3, 2, 0, NONE, UINT8_HWC", // portrait
        "500, 375, 3, 2, 0, NONE, FLOAT32_CHW", // float32 output
        "333, 333, 3, 0, 0, NONE, UINT8_HWC", // 4:4:4 square
        "517, 389, 3, 1, 0, NONE, UINT8_HWC", // 4:2:2, odd sizes
        "640, 427, 1, 3, 0, NONE, UINT8_HWC", // gray
        "500, 333, 3, 2, 16384, NONE, UINT8_HWC", // progressive (TJFLAG_PROGRESSIVE)
        "1200, 900, 3, 2, 0, POWERS_OF_TWO, UINT8_HWC", // decoded at 1/2
        "2100, 1100, 3, 2, 0, POWERS_OF_TWO, UINT8_HWC", // at 1/4, a wide panorama
        "1023, 2047, 3, 1, 0, POWERS_OF_TWO, UINT8_HWC", // 4:2:2 tall, at 1/4
        "120, 90, 3, 2, 0, NONE, UINT8_HWC", // smaller than the output: an upscale
        "4000, 260, 3, 2, 0, NONE, UINT8_HWC", // a crop of a very wide strip
    })
    void decodesOnlyWhatTheCropReadsAndGivesTheWholeDecodesBytes(
            int w,
            int h,
            int channels,
            int subsamp,
            int flags,
            TransformSpec.DctScaling dct,
            TransformSpec.Output output)
            throws Exception {
        byte[] jpeg = TestImages.jpeg(TestImages.rgb(w, h, 7L * w + h), w, h, channels, 90, subsamp, flags);
        Files.createDirectories(tmp.resolve("c"));
        Files.write(tmp.resolve("c/x.jpg"), jpeg);
        Dataset dataset = ImageFolder.scan(tmp);
        TransformSpec spec = TransformSpec.defaults().withDctScaling(dct).withOutput(output);
        try (Arena arena = Arena.ofConfined();
                SampleTransform t = new SampleTransform(dataset, spec);
                JpegDecoder whole = new JpegDecoder(spec);
                Resampler resampler = new Resampler(spec)) {
            MemorySegment got = arena.allocate(spec.sampleBytes());
            assertEquals(SampleStatus.OK, t.apply(0, got, 0), t.message());

            MemorySegment in = arena.allocate(jpeg.length);
            MemorySegment.copy(jpeg, 0, in, JAVA_BYTE, 0, jpeg.length);
            assertEquals(SampleStatus.OK, whole.readHeader(in, jpeg.length));
            assertEquals(SampleStatus.OK, whole.decodePixels(in, jpeg.length, Math.min(w, h), spec.resize()));
            MemorySegment expected = arena.allocate(spec.sampleBytes());
            resampler.resizeCenterCrop(
                    whole.decoded().pixels(),
                    whole.decoded().width(),
                    whole.decoded().height(),
                    w,
                    h,
                    expected,
                    0);
            assertArrayEquals(expected.toArray(JAVA_BYTE), got.toArray(JAVA_BYTE));

            // And it was a region: the decoder read fewer pixels than the whole scaled image.
            if (!StokeJpeg.available()) {
                // Without the region decoder (no gcc or libjpeg headers at build time) whole images are decoded.
                System.err.println("[stoke] NOT CHECKED: eval region size: " + StokeJpeg.unavailableReason());
                return;
            }
            JpegDecoder region = new JpegDecoder(spec);
            try (region) {
                assertEquals(SampleStatus.OK, region.readHeader(in, jpeg.length));
                CropBox box = new CropBox();
                int sw = region.scaledWidthAt(Math.min(w, h), spec.resize());
                int sh = region.scaledHeightAt(Math.min(w, h), spec.resize());
                assertEquals(whole.decoded().width(), sw);
                assertEquals(whole.decoded().height(), sh);
                resampler.evalSourceBox(w, h, sw, sh, box);
                assertEquals(SampleStatus.OK, region.decodeBox(in, jpeg.length, box, Math.min(w, h), spec.resize()));
                if (w > 2 * h || h > 2 * w) {
                    assertTrue(
                            (long) region.decoded().width() * region.decoded().height() < (long) sw * sh / 2,
                            region.decoded().width() + "x" + region.decoded().height() + " of " + sw + "x" + sh);
                }
            }
        }
    }
}
