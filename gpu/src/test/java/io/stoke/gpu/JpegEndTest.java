package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.testing.TestImages;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Which JPEGs the GPU decode takes as whole, and which it sends to the CPU as possibly cut short. */
class JpegEndTest {
    static boolean complete(byte[] jpeg) {
        return JpegEnd.complete(MemorySegment.ofArray(jpeg), jpeg.length);
    }

    /** {@code main} with an APP1 segment holding {@code thumbnail} (as EXIF holds one) after its SOI. */
    static byte[] withThumbnail(byte[] main, byte[] thumbnail) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(main, 0, 2);
        int length = thumbnail.length + 2;
        out.write(new byte[] {(byte) 0xFF, (byte) 0xE1, (byte) (length >> 8), (byte) length}, 0, 4);
        out.write(thumbnail, 0, thumbnail.length);
        out.write(main, 2, main.length - 2);
        return out.toByteArray();
    }

    @Test
    void aWholeFileIsCompleteWithOrWithoutBytesAfterItsEnd() {
        byte[] jpeg = TestImages.jpeg(64, 48, 3);
        assertTrue(complete(jpeg));
        byte[] padded = Arrays.copyOf(jpeg, jpeg.length + 100); // zeros after EOI, as some cameras write
        assertTrue(complete(padded));
        assertTrue(complete(withThumbnail(jpeg, TestImages.jpeg(16, 12, 4))));
    }

    @Test
    void aFileCutShortIsNotEvenWhenItsThumbnailEndsWhole() {
        byte[] jpeg = TestImages.jpeg(64, 48, 3);
        assertFalse(complete(Arrays.copyOf(jpeg, jpeg.length * 2 / 3)));
        assertFalse(complete(Arrays.copyOf(jpeg, jpeg.length - 1)), "EOI's last byte missing");
        byte[] thumbed = withThumbnail(jpeg, TestImages.jpeg(16, 12, 4));
        assertFalse(complete(Arrays.copyOf(thumbed, thumbed.length * 3 / 4)), "the thumbnail's EOI does not count");
    }

    @Test
    void aBrokenHeaderIsNotCompleteAndNoReadLeavesTheFile() {
        byte[] jpeg = TestImages.jpeg(64, 48, 3);
        byte[] badLength = jpeg.clone();
        badLength[4] = 0;
        badLength[5] = 1; // the first segment claims a length of 1
        assertFalse(complete(badLength));
        byte[] pastTheEnd = jpeg.clone();
        pastTheEnd[4] = (byte) 0xFF;
        pastTheEnd[5] = (byte) 0xFF; // the first segment runs past the end
        assertFalse(complete(pastTheEnd));
        assertFalse(complete(new byte[] {(byte) 0xFF, (byte) 0xD8, (byte) 0xFF}));
        assertFalse(complete(new byte[] {(byte) 0xFF, (byte) 0xD8, (byte) 0xFF, (byte) 0xD9}), "no scan at all");
        for (int n = 0; n < jpeg.length - 1; n += 7) {
            // Every prefix, in a segment of exactly its length: a read past n would throw.
            assertFalse(JpegEnd.complete(MemorySegment.ofArray(Arrays.copyOf(jpeg, n)), n), "prefix " + n);
        }
    }
}
