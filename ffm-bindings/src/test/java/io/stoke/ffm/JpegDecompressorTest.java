package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;

/** The binding against javax.imageio, an independent JPEG decoder (IJG libjpeg 6b inside the JDK). */
class JpegDecompressorTest {
    private static byte[] texture(int w, int h) {
        SplittableRandom r = new SplittableRandom(7);
        byte[] px = new byte[w * h * 3];
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                for (int c = 0; c < 3; c++) {
                    int v = (x * (c + 1) + y * (3 - c)) % 200 + r.nextInt(40);
                    px[(y * w + x) * 3 + c] = (byte) v;
                }
            }
        }
        return px;
    }

    private static byte[] compress(Arena arena, byte[] px, int w, int h, int subsamp, int flags) {
        try (JpegCompressor c = new JpegCompressor()) {
            MemorySegment src = segment(arena, px);
            MemorySegment dst = arena.allocate(JpegCompressor.maxSize(w, h, subsamp));
            long n = c.compress(src, w, w * 3, h, TurboJpeg.TJPF_RGB, subsamp, 90, flags, dst);
            return dst.asSlice(0, n).toArray(JAVA_BYTE);
        }
    }

    private static void assertMatchesImageIo(int subsamp, int flags) throws Exception {
        int w = 123;
        int h = 77;
        try (Arena arena = Arena.ofConfined();
                JpegDecompressor d = new JpegDecompressor()) {
            byte[] jpeg = compress(arena, texture(w, h), w, h, subsamp, flags);
            MemorySegment in = segment(arena, jpeg);
            assertEquals(0, d.readHeader(in, jpeg.length), d::errorMessage);
            assertEquals(w, d.width());
            assertEquals(h, d.height());
            assertEquals(subsamp, d.subsampling());
            int pitch = w * 3 + 5; // a pitch wider than the row must be honoured
            MemorySegment out = arena.allocate((long) pitch * h);
            assertEquals(0, d.decompress(in, jpeg.length, out, w, pitch, h, TurboJpeg.TJPF_RGB, 0), d::errorMessage);

            BufferedImage ref = ImageIO.read(new ByteArrayInputStream(jpeg));
            assertEquals(w, ref.getWidth());
            int maxDiff = 0;
            long sumDiff = 0;
            for (int y = 0; y < h; y++) {
                for (int x = 0; x < w; x++) {
                    int rgb = ref.getRGB(x, y);
                    int[] expect = {(rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF};
                    for (int c = 0; c < 3; c++) {
                        int got = out.get(JAVA_BYTE, (long) y * pitch + x * 3 + c) & 0xFF;
                        int diff = Math.abs(got - expect[c]);
                        maxDiff = Math.max(maxDiff, diff);
                        sumDiff += diff;
                    }
                }
            }
            // Both use the accurate integer IDCT and fancy upsampling; they differ only in rounding.
            assertTrue(maxDiff <= 3, "max difference from javax.imageio " + maxDiff);
            assertTrue(sumDiff / (double) (w * h * 3) < 0.5, "mean difference " + sumDiff / (double) (w * h * 3));
        }
    }

    @Test
    void baseline420MatchesReferenceDecoder() throws Exception {
        assertMatchesImageIo(TurboJpeg.TJSAMP_420, 0);
    }

    @Test
    void baseline444MatchesReferenceDecoder() throws Exception {
        assertMatchesImageIo(TurboJpeg.TJSAMP_444, 0);
    }

    @Test
    void progressiveMatchesReferenceDecoder() throws Exception {
        assertMatchesImageIo(TurboJpeg.TJSAMP_420, TurboJpeg.TJFLAG_PROGRESSIVE);
    }

    @Test
    void aBaselineImageAfterAProgressiveOneOnTheSameHandleIsIntact() {
        int w = 96;
        int h = 64;
        byte[] px = texture(w, h);
        try (Arena arena = Arena.ofConfined();
                JpegCompressor shared = new JpegCompressor()) {
            MemorySegment src = segment(arena, px);
            MemorySegment dst = arena.allocate(JpegCompressor.maxSize(w, h, TurboJpeg.TJSAMP_420));
            long n0 = shared.compress(src, w, w * 3, h, TurboJpeg.TJPF_RGB, TurboJpeg.TJSAMP_420, 90, 0, dst);
            byte[] before = dst.asSlice(0, n0).toArray(JAVA_BYTE);
            shared.compress(
                    src, w, w * 3, h, TurboJpeg.TJPF_RGB, TurboJpeg.TJSAMP_420, 90, TurboJpeg.TJFLAG_PROGRESSIVE, dst);
            long n1 = shared.compress(src, w, w * 3, h, TurboJpeg.TJPF_RGB, TurboJpeg.TJSAMP_420, 90, 0, dst);
            assertArrayEquals(
                    before,
                    dst.asSlice(0, n1).toArray(JAVA_BYTE),
                    "baseline JPEG differs after a progressive one on the same compressor");
        }
    }

    /** {@code bytes} in native memory, as the decoder reads them. */
    private static MemorySegment segment(Arena arena, byte[] bytes) {
        MemorySegment s = arena.allocate(Math.max(1, bytes.length));
        MemorySegment.copy(bytes, 0, s, JAVA_BYTE, 0, bytes.length);
        return s;
    }

    /** Decodes {@code jpeg} with {@code d}; returns the pixels, or null with the error. */
    private static byte[] decodeOrNull(Arena arena, JpegDecompressor d, byte[] jpeg, int w, int h) {
        MemorySegment in = segment(arena, jpeg);
        if (d.readHeader(in, jpeg.length) != 0 || d.width() != w || d.height() != h) {
            return null;
        }
        MemorySegment out = arena.allocate((long) w * h * 3);
        return d.decompress(in, jpeg.length, out, w, w * 3, h, TurboJpeg.TJPF_RGB, 0) == 0
                ? out.toArray(JAVA_BYTE)
                : null;
    }

    /**
     * A file that fails half-way through its header or data must leave nothing behind on the
     * handle: libjpeg-turbo 2.1 keeps the failed stream's marker-reader state, so without a fresh
     * handle the next, good, image fails with the bad one's message ("Unsupported marker type").
     */
    @Test
    void aGoodImageAfterABrokenOneOnTheSameHandleDecodesAndReportsItsOwnErrorsOnly() {
        int w = 80;
        int h = 60;
        try (Arena arena = Arena.ofConfined();
                JpegDecompressor d = new JpegDecompressor()) {
            byte[] good = compress(arena, texture(w, h), w, h, TurboJpeg.TJSAMP_420, 0);
            byte[] expected = decodeOrNull(arena, d, good, w, h);
            assertNotNull(expected, d::errorMessage);
            byte[] garbage = new byte[4096];
            new SplittableRandom(7).nextBytes(garbage);
            garbage[0] = (byte) 0xFF;
            garbage[1] = (byte) 0xD8;
            garbage[2] = (byte) 0xFF;
            garbage[3] = (byte) 0x01;
            byte[][] broken = {
                garbage, Arrays.copyOf(good, 30), Arrays.copyOf(good, good.length / 2), Arrays.copyOf(good, 3)
            };
            for (byte[] bad : broken) {
                assertNull(decodeOrNull(arena, d, bad, w, h), "a broken file decoded");
                String badMessage = d.errorMessage();
                assertArrayEquals(
                        expected,
                        decodeOrNull(arena, d, good, w, h),
                        "good image after a broken one (" + badMessage + "): " + d.errorMessage());
                // A header cut short reports its own reason, not the previous file's.
                assertNull(decodeOrNull(arena, d, Arrays.copyOf(good, 30), w, h));
                assertEquals(JpegDecompressor.HEADER_CUT_SHORT, d.errorMessage());
                assertArrayEquals(expected, decodeOrNull(arena, d, good, w, h), d::errorMessage);
            }
        }
    }

    @Test
    void refusesDestinationSmallerThanTheImage() {
        int w = 64;
        int h = 48;
        try (Arena arena = Arena.ofConfined();
                JpegDecompressor d = new JpegDecompressor()) {
            byte[] jpeg = compress(arena, texture(w, h), w, h, TurboJpeg.TJSAMP_420, 0);
            MemorySegment in = segment(arena, jpeg);
            MemorySegment tooSmall = arena.allocate((long) w * 3 * h - 1);
            assertThrows(
                    IndexOutOfBoundsException.class,
                    () -> d.decompress(in, jpeg.length, tooSmall, w, w * 3, h, TurboJpeg.TJPF_RGB, 0));
            assertThrows(IndexOutOfBoundsException.class, () -> d.readHeader(in, jpeg.length + 1));
        }
    }

    @Test
    void garbageGivesTheLibrarysMessage() {
        try (Arena arena = Arena.ofConfined();
                JpegDecompressor d = new JpegDecompressor()) {
            MemorySegment junk = arena.allocate(100);
            junk.fill((byte) 0x42);
            assertEquals(-1, d.readHeader(junk, 100));
            assertFalse(d.errorMessage().isBlank());
        }
    }

    @Test
    void closedDecompressorThrowsInsteadOfCrashing() {
        JpegDecompressor d = new JpegDecompressor();
        d.close();
        d.close();
        assertThrows(IllegalStateException.class, d::errorMessage);
    }

    @Test
    void scalingFactorsIncludeTheEighths() {
        ScalingFactors f = ScalingFactors.query();
        boolean half = false;
        for (int i = 0; i < f.size(); i++) {
            half |= f.num()[i] == 1 && f.denom()[i] == 2;
        }
        assertTrue(half, "1/2 missing from libjpeg-turbo's scaling factors");
        assertEquals(282, TurboJpeg.scaled(375, 6, 8));
    }

    @Test
    void missingLibraryIsAReadableError() {
        NativeLibraryMissingException e = assertThrows(
                NativeLibraryMissingException.class,
                () -> NativeLibraries.open(
                        "libnothing",
                        "stoke.test.nothing",
                        "Install it with: apt-get install nothing",
                        "libdefinitely-not-here.so.9"));
        assertTrue(e.getMessage().contains("apt-get install nothing"), e.getMessage());
        assertTrue(e.getMessage().contains("libdefinitely-not-here.so.9"), e.getMessage());
    }
}
