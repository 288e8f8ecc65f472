package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.StokeImage;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.TransformSpec;
import java.awt.image.BufferedImage;
import java.awt.image.IndexColorModel;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * PNGs written by the JDK's own encoder (javax.imageio) decode to the RGB that the JDK's decoder
 * reads from them; the hostile files of {@code native/fuzz/regressions-image} give their status
 * with a sentence. PIL is the reference in the Python tests (clients/python/tests/test_formats.py).
 */
class WholeImageDecoderTest {
    @BeforeEach
    void decoderIsBuilt() {
        String why = StokeImage.unavailableReason();
        if (why != null) {
            System.err.println("[stoke] SKIPPING the PNG and WebP decoder's tests: " + why);
        }
        Assumptions.assumeTrue(why == null, why);
    }

    private static Path regressions() {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.isDirectory(d.resolve("native/fuzz/regressions-image"))) {
                return d.resolve("native/fuzz/regressions-image");
            }
        }
        throw new IllegalStateException("native/fuzz/regressions-image not found");
    }

    private record Result(SampleStatus status, String message, int[] rgb, int width, int height) {}

    private static Result decode(byte[] file) {
        try (Arena arena = Arena.ofConfined();
                WholeImageDecoder d = new WholeImageDecoder(TransformSpec.defaults())) {
            MemorySegment data = arena.allocate(file.length);
            MemorySegment.copy(file, 0, data, JAVA_BYTE, 0, file.length);
            ImageFormat format = ImageFormat.sniff(data, file.length);
            SampleStatus s = d.readHeader(format, data, file.length);
            if (s == SampleStatus.OK) {
                s = d.decode(data, file.length);
            }
            if (s != SampleStatus.OK) {
                return new Result(s, d.message(), null, 0, 0);
            }
            int[] rgb = new int[d.decoded().width() * d.decoded().height()];
            for (int i = 0; i < rgb.length; i++) {
                int r = d.decoded().pixels().get(JAVA_BYTE, 4L * i) & 0xFF;
                int g = d.decoded().pixels().get(JAVA_BYTE, 4L * i + 1) & 0xFF;
                int b = d.decoded().pixels().get(JAVA_BYTE, 4L * i + 2) & 0xFF;
                rgb[i] = r << 16 | g << 8 | b;
            }
            return new Result(s, null, rgb, d.decoded().width(), d.decoded().height());
        }
    }

    private static byte[] png(BufferedImage image) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertTrue(ImageIO.write(image, "png", out));
        return out.toByteArray();
    }

    private static void assertSameAsImageIo(byte[] file, String what) throws Exception {
        BufferedImage want = ImageIO.read(new java.io.ByteArrayInputStream(file));
        Result got = decode(file);
        assertEquals(SampleStatus.OK, got.status(), got.message());
        assertEquals(want.getWidth(), got.width());
        assertEquals(want.getHeight(), got.height());
        // getRGB would pass a gray image through Java's linear gray colour space: read its samples.
        boolean grayRaster = want.getType() == BufferedImage.TYPE_BYTE_GRAY;
        for (int y = 0; y < want.getHeight(); y++) {
            for (int x = 0; x < want.getWidth(); x++) {
                int g = grayRaster ? want.getRaster().getSample(x, y, 0) : 0;
                assertEquals(
                        grayRaster ? g << 16 | g << 8 | g : want.getRGB(x, y) & 0xFFFFFF,
                        got.rgb()[y * want.getWidth() + x],
                        what + " at (" + x + ", " + y + ")");
            }
        }
    }

    @Test
    void pngsTheJdkWroteDecodeToTheJdksPixels() throws Exception {
        SplittableRandom r = new SplittableRandom(3);
        BufferedImage rgb = new BufferedImage(37, 23, BufferedImage.TYPE_INT_RGB);
        BufferedImage gray = new BufferedImage(37, 23, BufferedImage.TYPE_BYTE_GRAY);
        byte[] reds = new byte[16];
        byte[] greens = new byte[16];
        byte[] blues = new byte[16];
        for (int i = 0; i < 16; i++) {
            reds[i] = (byte) r.nextInt(256);
            greens[i] = (byte) r.nextInt(256);
            blues[i] = (byte) r.nextInt(256);
        }
        BufferedImage palette = new BufferedImage(
                37, 23, BufferedImage.TYPE_BYTE_BINARY, new IndexColorModel(4, 16, reds, greens, blues));
        for (int y = 0; y < 23; y++) {
            for (int x = 0; x < 37; x++) {
                int v = r.nextInt(1 << 24);
                rgb.setRGB(x, y, v);
                gray.getRaster().setSample(x, y, 0, v & 0xFF);
                palette.getRaster().setSample(x, y, 0, v & 15);
            }
        }
        assertSameAsImageIo(png(rgb), "8-bit RGB");
        assertSameAsImageIo(png(gray), "8-bit gray");
        assertSameAsImageIo(png(palette), "4-bit palette");
    }

    /**
     * The training transform decodes a WebP only around its box (libwebp's cropping): inside the box
     * its pixels must be the whole decode's, lossy files' chroma upsampling at the cut edges included.
     */
    @Test
    void aWebpRegionHoldsTheWholeDecodesPixelsInsideTheBox() throws Exception {
        for (String name : new String[] {"photo-lossy.webp", "photo-lossy-alpha.webp"}) {
            byte[] file;
            try (var in = getClass().getResourceAsStream(name)) {
                file = in.readAllBytes();
            }
            SplittableRandom r = new SplittableRandom(11);
            try (Arena arena = Arena.ofConfined();
                    WholeImageDecoder whole = new WholeImageDecoder(TransformSpec.defaults());
                    WholeImageDecoder part = new WholeImageDecoder(TransformSpec.defaults())) {
                MemorySegment data = arena.allocate(file.length);
                MemorySegment.copy(file, 0, data, JAVA_BYTE, 0, file.length);
                assertEquals(SampleStatus.OK, whole.readHeader(ImageFormat.WEBP, data, file.length));
                assertEquals(SampleStatus.OK, whole.decode(data, file.length));
                int w = whole.decoded().originalWidth();
                int h = whole.decoded().originalHeight();
                assertEquals(SampleStatus.OK, part.readHeader(ImageFormat.WEBP, data, file.length));
                int regions = 0;
                for (int t = 0; t < 300; t++) {
                    int bw = 1 + r.nextInt(w);
                    int bh = 1 + r.nextInt(h);
                    CropBox box = new CropBox().set(r.nextInt(w - bw + 1), r.nextInt(h - bh + 1), bw, bh, false);
                    assertEquals(SampleStatus.OK, part.decodeBox(data, file.length, box), part.message());
                    regions += part.decoded().width() < w || part.decoded().height() < h ? 1 : 0;
                    for (int y = box.top; y < box.top + bh; y++) {
                        for (int x = box.left; x < box.left + bw; x++) {
                            for (int c = 0; c < 3; c++) {
                                byte want = whole.decoded().pixels().get(JAVA_BYTE, 4L * (y * w + x) + c);
                                byte got = part.decoded()
                                        .pixels()
                                        .get(
                                                JAVA_BYTE,
                                                4L
                                                                * ((y
                                                                                        - part.decoded()
                                                                                                .y())
                                                                                * part.decoded()
                                                                                        .width()
                                                                        + x
                                                                        - part.decoded()
                                                                                .x())
                                                        + c);
                                assertEquals(want, got, name + " box " + box + " at (" + x + ", " + y + ")");
                            }
                        }
                    }
                }
                assertTrue(regions > 250, "most boxes decode a region smaller than the image: " + regions);
            }
        }
    }

    @Test
    void hostileFilesGiveTheirReasonAndNoPixels() throws Exception {
        Path dir = regressions();
        Result bomb = decode(Files.readAllBytes(dir.resolve("png-bomb-header")));
        assertEquals(SampleStatus.TOO_LARGE, bomb.status());
        assertEquals("PNG header claims 65500x65500 = 4290250000 pixels, over the budget of 36000000", bomb.message());
        Result cut = decode(Files.readAllBytes(dir.resolve("png-truncated")));
        assertEquals(SampleStatus.TRUNCATED, cut.status());
        assertEquals("PNG: premature end of PNG data", cut.message());
        Result webp = decode(Files.readAllBytes(dir.resolve("webp-truncated")));
        assertEquals(SampleStatus.TRUNCATED, webp.status(), webp.message());
        // Palette indices past the palette decode (black, as Pillow 11 gives them), never read past it.
        assertEquals(
                SampleStatus.OK,
                decode(Files.readAllBytes(dir.resolve("png-palette-index-overflow")))
                        .status());
        byte[] signatureOnly = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
        assertEquals(SampleStatus.TRUNCATED, decode(signatureOnly).status());
    }
}
