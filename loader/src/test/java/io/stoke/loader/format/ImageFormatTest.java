package io.stoke.loader.format;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Formats told by their first bytes, as the files' own specifications give the signatures. */
class ImageFormatTest {
    private static ImageFormat sniff(byte[] head) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(Math.max(1, head.length));
            MemorySegment.copy(head, 0, s, JAVA_BYTE, 0, head.length);
            return ImageFormat.sniff(s, head.length);
        }
    }

    private static byte[] bytes(Object... parts) {
        StringBuilder sb = new StringBuilder();
        for (Object p : parts) {
            if (p instanceof String str) {
                sb.append(str);
            } else {
                sb.append((char) ((Integer) p & 0xFF));
            }
        }
        return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    @Test
    void everySignatureIsTold() {
        Map<ImageFormat, byte[]> heads = Map.ofEntries(
                Map.entry(ImageFormat.JPEG, bytes(0xFF, 0xD8, 0xFF, 0xE0)),
                Map.entry(ImageFormat.PNG, bytes(0x89, "PNG", 0x0D, 0x0A, 0x1A, 0x0A)),
                Map.entry(ImageFormat.WEBP, bytes("RIFF", 0x24, 0, 0, 0, "WEBPVP8 ")),
                Map.entry(ImageFormat.GIF, bytes("GIF89a", 1, 0)),
                Map.entry(ImageFormat.BMP, bytes("BM", 0x36, 0, 0, 0)),
                Map.entry(ImageFormat.TIFF, bytes("II", 42, 0, 8, 0, 0, 0)),
                Map.entry(ImageFormat.PNM, bytes("P6\n17 13\n255\n")),
                Map.entry(ImageFormat.AVIF, bytes(0, 0, 0, 0x20, "ftypavif", 0, 0, 0, 0)),
                Map.entry(ImageFormat.HEIC, bytes(0, 0, 0, 0x18, "ftypheic", 0, 0, 0, 0)),
                Map.entry(ImageFormat.JPEG_XL, bytes(0xFF, 0x0A, 0xFA, 0x7F)),
                Map.entry(ImageFormat.JPEG_2000, bytes(0, 0, 0, 12, "jP  ", 0x0D, 0x0A, 0x87, 0x0A)));
        heads.forEach((format, head) -> assertEquals(format, sniff(head), format.title()));
        assertEquals(ImageFormat.TIFF, sniff(bytes("MM", 0, 42, 0, 0, 0, 8)));
        assertEquals(ImageFormat.JPEG_XL, sniff(bytes(0, 0, 0, 12, "JXL ", 0x0D, 0x0A, 0x87, 0x0A)));
        assertEquals(ImageFormat.UNKNOWN, sniff("this is plain text".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(ImageFormat.UNKNOWN, sniff(new byte[0]));
        assertEquals(ImageFormat.UNKNOWN, sniff(bytes("RIFF", 0, 0, 0, 0, "WAVEfmt ")), "RIFF that is not WebP");
    }

    @Test
    void onlyJpegPngAndWebpAreDecodedAndTheRestAreNamed() {
        for (ImageFormat f : ImageFormat.values()) {
            boolean decoded = f == ImageFormat.JPEG || f == ImageFormat.PNG || f == ImageFormat.WEBP;
            assertEquals(decoded, f.decoded(), f.title());
        }
        assertEquals("TIFF is not decoded by Stoke (it decodes JPEG, PNG and WebP)", ImageFormat.TIFF.notDecoded());
        assertFalse(ImageFormat.UNKNOWN.decoded());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment text = arena.allocateFrom("hello");
            assertTrue(ImageFormat.describeUnknown(text, 5)
                    .startsWith("no known image signature (first bytes 68 65 6c 6c"));
            assertEquals("only 2 bytes: too short for an image", ImageFormat.describeUnknown(text, 2));
        }
    }
}
