package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;

class JpegDecoderTest {
    private static MemorySegment native_(Arena arena, byte[] bytes) {
        MemorySegment s = arena.allocate(Math.max(1, bytes.length));
        MemorySegment.copy(bytes, 0, s, JAVA_BYTE, 0, bytes.length);
        return s;
    }

    private static SampleStatus decode(JpegDecoder d, Arena arena, byte[] jpeg) {
        return d.decode(native_(arena, jpeg), jpeg.length);
    }

    @Test
    void grayscaleComesOutAsRgb() {
        int w = 64;
        int h = 48;
        byte[] gray = new byte[w * h];
        for (int i = 0; i < gray.length; i++) {
            gray[i] = (byte) (2 * (i % w) + i / w); // a smooth ramp survives quality 95 almost exactly
        }
        byte[] jpeg = TestImages.jpeg(gray, w, h, 1, 95, TurboJpeg.TJSAMP_GRAY, 0);
        TransformSpec fullSize =
                TransformSpec.defaults().withResize(32, 32).withDctScaling(TransformSpec.DctScaling.NONE);
        try (Arena arena = Arena.ofConfined();
                JpegDecoder d = new JpegDecoder(fullSize)) {
            assertEquals(SampleStatus.OK, decode(d, arena, jpeg), d.message());
            assertEquals(w, d.decoded().width());
            BufferedImage ref;
            try {
                ref = ImageIO.read(new ByteArrayInputStream(jpeg));
            } catch (IOException e) {
                throw new AssertionError(e);
            }
            for (long p = 0; p < (long) w * h; p++) {
                int r = d.decoded().pixels().get(JAVA_BYTE, 4 * p);
                int expect = ref.getRaster().getSample((int) (p % w), (int) (p / w), 0);
                assertEquals(expect, r & 0xFF, 2, "gray level differs from javax.imageio at " + p);
                assertEquals(r, d.decoded().pixels().get(JAVA_BYTE, 4 * p + 1));
                assertEquals(r, d.decoded().pixels().get(JAVA_BYTE, 4 * p + 2));
            }
        }
    }

    @Test
    void cmykComesOutAsRgb() {
        int w = 32;
        int h = 32;
        // Uniform inverted CMYK: C=255 (no cyan), M=128, Y=0 (full yellow), K=200.
        byte[] cmyk = new byte[w * h * 4];
        for (int i = 0; i < w * h; i++) {
            cmyk[4 * i] = (byte) 255;
            cmyk[4 * i + 1] = (byte) 128;
            cmyk[4 * i + 2] = 0;
            cmyk[4 * i + 3] = (byte) 200;
        }
        byte[] jpeg = TestImages.jpeg(cmyk, w, h, 4, 100, TurboJpeg.TJSAMP_444, 0);
        TransformSpec fullSize =
                TransformSpec.defaults().withResize(32, 32).withDctScaling(TransformSpec.DctScaling.NONE);
        try (Arena arena = Arena.ofConfined();
                JpegDecoder d = new JpegDecoder(fullSize)) {
            assertEquals(SampleStatus.OK, decode(d, arena, jpeg), d.message());
            long mid = (16L * w + 16) * 4;
            assertEquals(200, d.decoded().pixels().get(JAVA_BYTE, mid) & 0xFF, 3); // 255*200/255
            assertEquals(100, d.decoded().pixels().get(JAVA_BYTE, mid + 1) & 0xFF, 3); // 128*200/255
            assertEquals(0, d.decoded().pixels().get(JAVA_BYTE, mid + 2) & 0xFF, 3);
        }
    }

    @Test
    void progressiveDecodesLikeBaseline() {
        int w = 120;
        int h = 90;
        byte[] rgb = TestImages.rgb(w, h, 5);
        byte[] base = TestImages.jpeg(rgb, w, h, 3, 90, TurboJpeg.TJSAMP_420, 0);
        byte[] prog = TestImages.jpeg(rgb, w, h, 3, 90, TurboJpeg.TJSAMP_420, TurboJpeg.TJFLAG_PROGRESSIVE);
        assertNotEquals(base.length, prog.length);
        TransformSpec fullSize =
                TransformSpec.defaults().withResize(64, 64).withDctScaling(TransformSpec.DctScaling.NONE);
        try (Arena arena = Arena.ofConfined();
                JpegDecoder d = new JpegDecoder(fullSize)) {
            assertEquals(SampleStatus.OK, decode(d, arena, base));
            byte[] a = d.decoded().pixels().asSlice(0, (long) w * h * 4).toArray(JAVA_BYTE);
            assertEquals(SampleStatus.OK, decode(d, arena, prog), d.message());
            byte[] b = d.decoded().pixels().asSlice(0, (long) w * h * 4).toArray(JAVA_BYTE);
            // Same coefficients, only the scan order differs: identical pixels.
            assertArrayEquals(a, b);
        }
    }

    @Test
    void dctScalingPicksTheSmallestScaleThatCoversTheTarget() {
        byte[] jpeg = TestImages.jpeg(1000, 750, 1);
        try (Arena arena = Arena.ofConfined()) {
            try (JpegDecoder all =
                    new JpegDecoder(TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.ALL))) {
                assertEquals(SampleStatus.OK, decode(all, arena, jpeg));
                assertEquals(375, all.decoded().width()); // 3/8: 750 * 3/8 = 282 >= 256, 2/8 would give 188
                assertEquals(282, all.decoded().height());
                assertEquals(1000, all.decoded().originalWidth());
            }
            try (JpegDecoder pow2 =
                    new JpegDecoder(TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.POWERS_OF_TWO))) {
                assertEquals(SampleStatus.OK, decode(pow2, arena, jpeg));
                assertEquals(500, pow2.decoded().width()); // 1/2: 375 >= 256; 1/4 would give 188
            }
            try (JpegDecoder none =
                    new JpegDecoder(TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE))) {
                assertEquals(SampleStatus.OK, decode(none, arena, jpeg));
                assertEquals(1000, none.decoded().width());
            }
            try (JpegDecoder small = new JpegDecoder(TransformSpec.defaults())) {
                byte[] tiny = TestImages.jpeg(200, 150, 2);
                assertEquals(SampleStatus.OK, decode(small, arena, tiny));
                assertEquals(200, small.decoded().width()); // smaller than the target: full size
            }
        }
    }

    @Test
    void dctScaledOutputStaysCloseToFullDecode() {
        int w = 1000;
        int h = 750;
        byte[] jpeg = TestImages.jpeg(w, h, 11);
        TransformSpec full = TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE);
        TransformSpec scaled = TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.ALL);
        byte[] a = process(full, jpeg);
        byte[] b = process(scaled, jpeg);
        long sum = 0;
        for (int i = 0; i < a.length; i++) {
            sum += Math.abs((a[i] & 0xFF) - (b[i] & 0xFF));
        }
        double mean = sum / (double) a.length;
        assertTrue(mean < 3.0, "mean difference between DCT-scaled and full decode: " + mean);
    }

    static byte[] process(TransformSpec spec, byte[] jpeg) {
        try (Arena arena = Arena.ofConfined();
                JpegDecoder d = new JpegDecoder(spec);
                Resampler r = new Resampler(spec)) {
            assertEquals(SampleStatus.OK, decode(d, arena, jpeg), d.message());
            MemorySegment out = arena.allocate(spec.sampleBytes());
            r.resizeCenterCrop(
                    d.decoded().pixels(),
                    d.decoded().width(),
                    d.decoded().height(),
                    d.decoded().originalWidth(),
                    d.decoded().originalHeight(),
                    out,
                    0);
            return out.toArray(JAVA_BYTE);
        }
    }

    @Test
    void hostileInputsAreClassified() {
        byte[] good = TestImages.jpeg(200, 150, 3);
        try (Arena arena = Arena.ofConfined();
                JpegDecoder d = new JpegDecoder(TransformSpec.defaults())) {
            assertEquals(SampleStatus.NOT_IMAGE, decode(d, arena, new byte[0]));
            assertEquals(SampleStatus.NOT_IMAGE, decode(d, arena, "hello world, not a jpeg".getBytes()));
            byte[] png = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13};
            assertEquals(SampleStatus.NOT_IMAGE, decode(d, arena, png));
            assertTrue(d.message().contains("PNG"), d.message());

            byte[] truncated = Arrays.copyOf(good, good.length / 2);
            assertEquals(SampleStatus.TRUNCATED, decode(d, arena, truncated), d.message());

            // Cut inside the header, before the frame gives a size: the file is short, not wrong.
            byte[] headerOnly = Arrays.copyOf(good, 40);
            assertEquals(SampleStatus.TRUNCATED, decode(d, arena, headerOnly), d.message());

            byte[] bomb = Bombs.withDimensions(good, 65000, 65000);
            assertEquals(SampleStatus.TOO_LARGE, decode(d, arena, bomb), d.message());
            assertTrue(d.message().contains("65000x65000"), d.message());

            // A header that claims a size within budget but whose data is far too short.
            byte[] lying = Bombs.withDimensions(good, 4000, 3000);
            SampleStatus s = decode(d, arena, lying);
            assertTrue(s == SampleStatus.TRUNCATED || s == SampleStatus.CORRUPT, s.toString());

            // Still healthy after all that.
            assertEquals(SampleStatus.OK, decode(d, arena, good));
        }
    }
}
