package io.stoke.loader.decode;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokeJpeg;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.testing.JpegMarkers;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Lossless restart markers ({@link RestartCopy}): the copy of every kind of JPEG decodes, through
 * the JDK's own JPEG decoder (independent of libjpeg), to its original's pixels; it is sequential,
 * with a DRI whose interval divides the MCUs of a row; what it cannot copy it keeps, saying why.
 */
class RestartCopyTest {
    @BeforeEach
    void needsTheLibrary() {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
    }

    private static byte[] copied(RestartCopy copy) {
        return copy.bytes().asSlice(0, copy.length()).toArray(ValueLayout.JAVA_BYTE);
    }

    private static RestartCopy.Outcome copy(RestartCopy copy, Arena arena, byte[] jpeg) {
        MemorySegment in = arena.allocateFrom(ValueLayout.JAVA_BYTE, jpeg);
        return copy.copy(in, jpeg.length);
    }

    private static int[] jdkPixels(byte[] jpeg) throws IOException {
        BufferedImage img = ImageIO.read(new ByteArrayInputStream(jpeg));
        return img.getRGB(0, 0, img.getWidth(), img.getHeight(), null, 0, img.getWidth());
    }

    /** The interval a copy's DRI holds, or -1 without one. */
    private static int interval(byte[] jpeg) {
        int at = JpegMarkers.find(jpeg, m -> m == 0xDD || m == 0xDA);
        return at < 0 || (jpeg[at + 1] & 0xFF) != 0xDD ? -1 : ((jpeg[at + 4] & 0xFF) << 8) | (jpeg[at + 5] & 0xFF);
    }

    @ParameterizedTest(name = "{0}x{1} sampling {2} progressive {3}")
    @CsvSource({
        "320, 240, 2, false", "320, 240, 2, true", "257, 131, 1, false", "257, 131, 1, true", "97, 301, 0, false",
        "97, 301, 0, true", "33, 17, 2, true", "1023, 9, 2, false", "200, 150, 3, false", "200, 150, 3, true"
    })
    void everyKindOfJpegIsCopiedToTheSamePixelsWithRowsOfWholeSegments(int w, int h, int samp, boolean progressive)
            throws IOException {
        boolean gray = samp == TurboJpeg.TJSAMP_GRAY;
        byte[] rgb = TestImages.rgb(w, h, w * 31L + h);
        byte[] pixels = gray ? Arrays.copyOf(rgb, w * h) : rgb;
        byte[] jpeg =
                TestImages.jpeg(pixels, w, h, gray ? 1 : 3, 88, samp, progressive ? TurboJpeg.TJFLAG_PROGRESSIVE : 0);
        try (Arena arena = Arena.ofConfined();
                RestartCopy copy = new RestartCopy(4, TransformSpec.defaults(), true)) {
            assertEquals(RestartCopy.Outcome.COPIED, copy(copy, arena, jpeg), copy.reason());
            byte[] out = copied(copy);
            assertEquals(progressive, copy.wasProgressive());
            assertFalse(TestImages.isProgressive(out));
            int mcuWidth = gray || samp == TurboJpeg.TJSAMP_444 ? 8 : 16;
            int perRow = (w + mcuWidth - 1) / mcuWidth;
            assertEquals(copy.interval(), interval(out));
            assertEquals(0, perRow % copy.interval(), "a row of " + perRow + " MCUs, interval " + copy.interval());
            assertTrue(Math.abs(copy.interval() - 4) <= Math.abs(perRow - 4), "the divisor nearest 4");
            assertArrayEquals(jdkPixels(jpeg), jdkPixels(out), "the JDK's decoder sees other pixels");
            // Copied again, it seeks already: kept as it is.
            assertEquals(RestartCopy.Outcome.SEEKABLE, copy(copy, arena, out));
        }
    }

    @Test
    void whatCannotBeCopiedIsKeptSayingWhy() {
        int w = 64;
        int h = 48;
        byte[] cmyk = new byte[w * h * 4];
        Arrays.fill(cmyk, (byte) 100);
        byte[] whole = TestImages.jpeg(w, h, 5);
        try (Arena arena = Arena.ofConfined();
                RestartCopy copy = new RestartCopy(4, TransformSpec.defaults(), true)) {
            byte[] cmykJpeg = TestImages.jpeg(cmyk, w, h, 4, 90, TurboJpeg.TJSAMP_444, 0);
            assertEquals(RestartCopy.Outcome.KEPT, copy(copy, arena, cmykJpeg));
            assertTrue(copy.reason().contains("CMYK"), copy.reason());
            byte[] cut = Arrays.copyOf(whole, whole.length * 2 / 3);
            assertEquals(RestartCopy.Outcome.KEPT, copy(copy, arena, cut));
            assertTrue(copy.reason().toLowerCase(java.util.Locale.ROOT).contains("premature end"), copy.reason());
            byte[] notJpeg = "not a JPEG at all, but long enough".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            assertEquals(RestartCopy.Outcome.KEPT, copy(copy, arena, notJpeg));
            assertNotNull(copy.reason());
            // After all that, a good file is still copied.
            assertEquals(RestartCopy.Outcome.COPIED, copy(copy, arena, whole), copy.reason());
        }
        assertTrue(StokeJpeg.available());
    }

    /**
     * {@code copyDecoding}, a miss copied as it is decoded: the copy is {@code copy()}'s, byte for
     * byte, and the region is the region decoder's from the original, at every scale it takes;
     * what {@code copy()} keeps or finds seekable, a truncated file, and a 1/8 scale (libjpeg then
     * keeps only DC coefficients) are declined, saying why, with nothing to use.
     */
    @ParameterizedTest(name = "{0}x{1} sampling {2} progressive {3}")
    @CsvSource({
        "320, 240, 2, false",
        "320, 240, 2, true",
        "257, 131, 1, false",
        "97, 301, 0, true",
        "200, 150, 3, false",
        "200, 150, 3, true"
    })
    void aCopyMadeAsItsRegionIsDecodedIsTheCopyAndTheRegionMadeApart(int w, int h, int samp, boolean progressive) {
        boolean gray = samp == TurboJpeg.TJSAMP_GRAY;
        byte[] rgb = TestImages.rgb(w, h, w * 7L + h);
        byte[] jpeg = TestImages.jpeg(
                gray ? Arrays.copyOf(rgb, w * h) : rgb,
                w,
                h,
                gray ? 1 : 3,
                85,
                samp,
                progressive ? TurboJpeg.TJFLAG_PROGRESSIVE : 0);
        try (Arena arena = Arena.ofConfined();
                RestartCopy apart = new RestartCopy(4, TransformSpec.defaults(), false);
                RestartCopy both = new RestartCopy(4, TransformSpec.defaults(), false)) {
            MemorySegment in = arena.allocateFrom(ValueLayout.JAVA_BYTE, jpeg);
            assertEquals(RestartCopy.Outcome.COPIED, apart.copy(in, jpeg.length), apart.reason());
            byte[] copy = copied(apart);
            long capacity = (long) (w + 64) * 4 * h;
            MemorySegment pixels = arena.allocate(capacity);
            MemorySegment expected = arena.allocate(capacity);
            MemorySegment region = arena.allocate(4L * StokeJpeg.REGION_FIELDS, 4);
            MemorySegment regionApart = arena.allocate(4L * StokeJpeg.REGION_FIELDS, 4);
            MemorySegment message = arena.allocate(256);
            java.util.SplittableRandom r = new java.util.SplittableRandom(w + h);
            for (int num = 2; num <= 8; num++) {
                int sw = (w * num + 7) / 8;
                int sh = (h * num + 7) / 8;
                int bw = 1 + r.nextInt(sw);
                int bh = 1 + r.nextInt(sh);
                int x = r.nextInt(sw - bw + 1);
                int y = r.nextInt(sh - bh + 1);
                String at = bw + "x" + bh + "+" + x + "+" + y + " at " + num + "/8";
                assertTrue(
                        both.copyDecoding(in, jpeg.length, num, 8, x, y, bw, bh, pixels, capacity, region),
                        at + ": " + both.reason());
                assertArrayEquals(copy, copied(both), at + ": the copy");
                assertEquals(apart.interval(), both.interval());
                assertEquals(
                        StokeJpeg.OK,
                        StokeJpeg.decodeRegion(
                                in,
                                jpeg.length,
                                num,
                                8,
                                x,
                                y,
                                bw,
                                bh,
                                1L << 30,
                                500,
                                0,
                                expected,
                                capacity,
                                regionApart,
                                message,
                                256),
                        message.getString(0));
                for (int f = 0; f < StokeJpeg.REGION_FIELDS; f++) {
                    assertEquals(
                            regionApart.getAtIndex(ValueLayout.JAVA_INT, f),
                            region.getAtIndex(ValueLayout.JAVA_INT, f),
                            at);
                }
                long bytes = 4L * region.getAtIndex(ValueLayout.JAVA_INT, StokeJpeg.REGION_WIDTH) * bh;
                assertEquals(-1, MemorySegment.mismatch(expected, 0, bytes, pixels, 0, bytes), at + ": the pixels");
            }
            // Declined, with nothing to use: a 1/8 scale, the copy itself (it seeks), a truncated file.
            assertFalse(both.copyDecoding(in, jpeg.length, 1, 8, 0, 0, 1, 1, pixels, capacity, region));
            assertTrue(both.reason().contains("1/8"), both.reason());
            assertEquals(0, both.length());
            MemorySegment seekable = arena.allocateFrom(ValueLayout.JAVA_BYTE, copy);
            assertFalse(both.copyDecoding(seekable, copy.length, 8, 8, 0, 0, 8, 8, pixels, capacity, region));
            assertTrue(both.reason().contains("seeks already"), both.reason());
            assertFalse(both.copyDecoding(in, jpeg.length * 2L / 3, 8, 8, 0, 0, 8, 8, pixels, capacity, region));
            assertTrue(both.reason().toLowerCase(java.util.Locale.ROOT).contains("premature end"), both.reason());
        }
    }
}
