package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokeJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.CounterRandom;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Decoding only the box's region (libjpeg's crop and skip) against decoding the whole image and
 * cropping: the training transform's output must be the same bytes.
 */
class RegionDecodeTest {
    private static final int SIZE = 96;
    /** How many region decodes really left something out (the rest covered the whole image). */
    private static final AtomicInteger PARTIAL = new AtomicInteger();

    /** The train transform's output for {@code box}: by region decode when {@code region}, else whole. */
    private static byte[] output(byte[] jpeg, CropBox box, TransformSpec spec, boolean region) {
        try (Arena arena = Arena.ofConfined();
                JpegDecoder d = new JpegDecoder(spec);
                Resampler r = new Resampler(spec)) {
            MemorySegment in = arena.allocate(jpeg.length);
            MemorySegment.copy(jpeg, 0, in, JAVA_BYTE, 0, jpeg.length);
            assertEquals(SampleStatus.OK, d.readHeader(in, jpeg.length), d::message);
            SampleStatus s = region
                    ? d.decodeBox(in, jpeg.length, box, SIZE)
                    : d.decodePixels(in, jpeg.length, Math.min(box.width, box.height), SIZE);
            assertEquals(SampleStatus.OK, s, d::message);
            if (region) {
                assertTrue(d.decoded().width() <= d.decoded().decodedWidth()
                        && d.decoded().height() <= d.decoded().decodedHeight());
                PARTIAL.addAndGet(
                        d.decoded().width() < d.decoded().decodedWidth()
                                        || d.decoded().height() < d.decoded().decodedHeight()
                                ? 1
                                : 0);
            }
            MemorySegment out = arena.allocate(spec.sampleBytes());
            r.resizedCrop(d.decoded(), box, out, 0);
            return out.toArray(JAVA_BYTE);
        }
    }

    @ParameterizedTest(name = "{0}x{1}, {2} channel(s), subsampling {3}, flags {4}, DCT {5}")
    @CsvSource({
        "500, 375, 3, 2, 0, NONE", // 4:2:0, ImageNet's usual
        "500, 375, 3, 2, 0, POWERS_OF_TWO",
        "501, 377, 3, 0, 0, NONE", // 4:4:4, odd sizes
        "640, 480, 3, 1, 0, POWERS_OF_TWO", // 4:2:2
        "333, 250, 1, 3, 0, NONE", // gray
        "480, 360, 3, 2, 16384, NONE", // progressive (TJFLAG_PROGRESSIVE)
        "1200, 900, 3, 2, 0, POWERS_OF_TWO"
    }) // large enough for 1/2 and 1/4 scales
    void regionDecodeGivesTheWholeDecodesBytes(int w, int h, int channels, int subsamp, int flags, String dct) {
        Assumptions.assumeTrue(StokeJpeg.available(), () -> {
            System.err.println("[stoke] SKIPPING region decode check: " + StokeJpeg.unavailableReason());
            return StokeJpeg.unavailableReason();
        });
        byte[] rgb = TestImages.rgb(w, h, w + h);
        byte[] pixels = rgb;
        if (channels == 1) {
            pixels = new byte[w * h];
            for (int i = 0; i < pixels.length; i++) {
                pixels[i] = rgb[3 * i];
            }
        }
        byte[] jpeg = TestImages.jpeg(pixels, w, h, channels, 90, subsamp, flags);
        TransformSpec spec = TransformSpec.defaults()
                .withTrain(SIZE, RandomResizedCrop.defaults())
                .withDctScaling(TransformSpec.DctScaling.valueOf(dct));
        RandomResizedCrop crop = RandomResizedCrop.defaults();
        CounterRandom random = new CounterRandom();
        SplittableRandom edges = new SplittableRandom(w);
        for (int k = 0; k < 40; k++) {
            CropBox box = new CropBox();
            if (k < 8) {
                // Boxes on the image's edges and corners, and odd offsets.
                int bw = 1 + edges.nextInt(w);
                int bh = 1 + edges.nextInt(h);
                box.set(k % 2 == 0 ? 0 : w - bw, k % 4 < 2 ? 0 : h - bh, bw, bh, k % 3 == 0);
            } else {
                random.reset(9, 0, k);
                crop.draw(w, h, random, box);
            }
            assertArrayEquals(output(jpeg, box, spec, false), output(jpeg, box, spec, true), "box " + box);
        }
        assertTrue(PARTIAL.get() >= 20, "only " + PARTIAL.get() + " of 40 boxes decoded less than the whole image");
        PARTIAL.set(0);
    }
}
