package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The evaluation transform on an image that already has the resize's size (what {@code stoke pack}
 * writes): only the centre crop's region is decoded and copied. Its bytes must be those of a whole
 * decode (TurboJPEG, no DCT scaling), centre-cropped as torchvision's {@code CenterCrop} does.
 */
class EvalIdentityTest {
    @TempDir
    Path tmp;

    @ParameterizedTest(name = "{0}x{1}, {2} channels, subsampling {3}, flags {4}")
    @CsvSource({
        "256, 341, 3, 2, 0", // 4:2:0 portrait, ImageNet packed at 256
        "384, 256, 3, 2, 0", // landscape
        "256, 256, 3, 0, 0", // 4:4:4 square
        "256, 301, 3, 1, 0", // 4:2:2, odd crop offsets
        "290, 256, 1, 3, 0", // gray
        "256, 333, 3, 2, 16384", // progressive (TJFLAG_PROGRESSIVE)
    })
    void decodesOnlyTheCropAndEqualsTheWholeDecodeCropped(int w, int h, int channels, int subsamp, int flags)
            throws Exception {
        int crop = 224;
        byte[] jpeg = TestImages.jpeg(TestImages.rgb(w, h, w + 3L * h), w, h, channels, 90, subsamp, flags);
        Files.createDirectories(tmp.resolve("c"));
        Files.write(tmp.resolve("c/x.jpg"), jpeg);
        Dataset dataset = ImageFolder.scan(tmp);
        TransformSpec spec =
                TransformSpec.defaults().withResize(256, crop).withDctScaling(TransformSpec.DctScaling.NONE);
        try (Arena arena = Arena.ofConfined();
                SampleTransform t = new SampleTransform(dataset, spec);
                JpegDecoder whole = new JpegDecoder(spec)) {
            MemorySegment out = arena.allocate(spec.sampleBytes());
            assertEquals(SampleStatus.OK, t.apply(0, out, 0), t.message());
            MemorySegment in = arena.allocate(jpeg.length);
            MemorySegment.copy(jpeg, 0, in, JAVA_BYTE, 0, jpeg.length);
            assertEquals(SampleStatus.OK, whole.decode(in, jpeg.length));
            assertEquals(w, whole.decoded().width());
            int left = Resampler.cropOffset(w, crop);
            int top = Resampler.cropOffset(h, crop);
            for (int y = 0; y < crop; y++) {
                for (int x = 0; x < crop; x++) {
                    int rgbx = whole.decoded().pixels().get(JAVA_INT, 4L * ((long) (top + y) * w + left + x));
                    for (int c = 0; c < 3; c++) {
                        assertEquals(
                                (rgbx >>> (8 * c)) & 0xFF,
                                out.get(JAVA_BYTE, 3L * (y * crop + x) + c) & 0xFF,
                                "pixel (" + x + ", " + y + ") channel " + c);
                    }
                }
            }
        }
    }
}
