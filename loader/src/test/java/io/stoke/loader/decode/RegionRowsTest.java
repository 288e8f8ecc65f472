package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokeJpeg;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.testing.JpegMarkers;
import io.stoke.loader.testing.RegionCalls;
import io.stoke.loader.testing.RegionCalls.Region;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Stoke's region decoder (native/pixels/stoke_jpeg.c) called directly, row by row against
 * TurboJPEG's whole decode: every region height, so that the last row falls at each position in
 * an iMCU row (where libjpeg's fancy upsampling reads the row group below), for baseline and
 * progressive files at full and reduced DCT scales; and damaged progressive files.
 */
class RegionRowsTest {

    @BeforeEach
    void needsTheRegionDecoder() {
        Assumptions.assumeTrue(StokeJpeg.available(), () -> {
            System.err.println("[stoke] SKIPPING region rows check: " + StokeJpeg.unavailableReason());
            return StokeJpeg.unavailableReason();
        });
    }

    private static Region decodeRegion(byte[] jpeg, int num, int denom, int x, int y, int w, int h) {
        return RegionCalls.decode(jpeg, num, denom, x, y, w, h, 0);
    }

    /** TurboJPEG's decode of the whole image at 1/denom, as RGBX rows. */
    private static byte[] wholeDecode(byte[] jpeg, int denom, int[] size) {
        TransformSpec spec = TransformSpec.defaults()
                .withDctScaling(denom == 1 ? TransformSpec.DctScaling.NONE : TransformSpec.DctScaling.POWERS_OF_TWO);
        try (Arena arena = Arena.ofConfined();
                JpegDecoder d = new JpegDecoder(spec)) {
            MemorySegment in = arena.allocate(jpeg.length);
            MemorySegment.copy(jpeg, 0, in, JAVA_BYTE, 0, jpeg.length);
            assertEquals(SampleStatus.OK, d.readHeader(in, jpeg.length), d::message);
            int shorter = Math.min(d.decoded().originalWidth(), d.decoded().originalHeight());
            assertEquals(
                    SampleStatus.OK,
                    d.decodePixels(in, jpeg.length, shorter, (shorter + denom - 1) / denom),
                    d::message);
            size[0] = d.decoded().width();
            size[1] = d.decoded().height();
            return d.decoded()
                    .pixels()
                    .asSlice(0, (long) d.decoded().width() * 4 * d.decoded().height())
                    .toArray(JAVA_BYTE);
        }
    }

    @ParameterizedTest(name = "{0}x{1}, subsampling {2}, 1/{3}, flags {4}")
    @CsvSource({
        "240, 180, 2, 1, 0", // 4:2:0: iMCU rows of 16
        "240, 181, 1, 1, 0", // 4:2:2, an odd height
        "200, 150, 0, 1, 0", // 4:4:4: iMCU rows of 8
        "480, 360, 2, 2, 0", // 4:2:0 decoded at 1/2
        "240, 180, 2, 1, 16384", // progressive (TJFLAG_PROGRESSIVE): all scans read first
        "240, 181, 1, 1, 16384",
        "200, 150, 0, 1, 16384",
        "480, 360, 2, 2, 16384",
        "640, 480, 2, 4, 16384"
    }) // at 1/4
    void everyRegionHeightGivesTheWholeDecodesRows(int w, int h, int subsamp, int denom, int flags) {
        byte[] jpeg = TestImages.jpeg(TestImages.rgb(w, h, 31L * w + h), w, h, 3, 90, subsamp, flags);
        int[] size = new int[2];
        byte[] whole = wholeDecode(jpeg, denom, size);
        int sw = size[0];
        int sh = size[1];
        // Every last row: each position against the iMCU rows, near the top, the middle and the bottom.
        // The region's first row and its cut columns have edges of their own (fancy upsampling has
        // no neighbour there, which Stoke's caller covers with a margin): asked for with 2 pixels
        // more above and to each side, those are left out. Its last row has no margin: libjpeg
        // reads the rows below it that it needs before it stops.
        int x = sw / 5;
        int cols = sw / 3;
        for (int y : new int[] {0, 3, sh / 2}) {
            int top = Math.max(0, y - 2);
            for (int end = y + 1; end <= sh; end++) {
                Region r = decodeRegion(jpeg, 1, denom, x - 2, top, cols + 4, end - top);
                assertEquals(StokeJpeg.OK, r.status(), r.message());
                for (int row = y; row < end; row++) {
                    int from = (row * sw + x) * 4;
                    byte[] expected = Arrays.copyOfRange(whole, from, from + cols * 4);
                    int at = ((row - top) * r.width() + x - r.x()) * 4;
                    byte[] got = Arrays.copyOfRange(r.rgbx(), at, at + cols * 4);
                    if (!Arrays.equals(expected, got)) {
                        fail("rows [" + y + ", " + end + ") of " + sw + "x" + sh + ": row " + row + " differs");
                    }
                }
            }
        }
    }

    /** The offset of the n-th (0-based) start-of-scan marker's entropy-coded data. */
    private static int scanData(byte[] jpeg, int n) {
        int seen = 0;
        for (int i = 2; i + 3 < jpeg.length; i++) {
            if ((jpeg[i] & 0xFF) == 0xFF && (jpeg[i + 1] & 0xFF) == 0xDA) {
                if (seen++ == n) {
                    return i + 2 + JpegMarkers.length(jpeg, i);
                }
            }
        }
        throw new IllegalArgumentException("fewer than " + (n + 1) + " scans");
    }

    /** The end of the entropy-coded data that starts at {@code from}: the next marker. */
    private static int scanEnd(byte[] jpeg, int from) {
        for (int i = from; i + 1 < jpeg.length; i++) {
            int next = jpeg[i + 1] & 0xFF;
            if ((jpeg[i] & 0xFF) == 0xFF && next != 0 && (next < 0xD0 || next > 0xD7)) {
                return i;
            }
        }
        throw new IllegalArgumentException("unterminated scan");
    }

    private static byte[] progressive(int w, int h) {
        return TestImages.jpeg(
                TestImages.rgb(w, h, 7), w, h, 3, 90, TurboJpeg.TJSAMP_420, TurboJpeg.TJFLAG_PROGRESSIVE);
    }

    @Test
    void aProgressiveFileCutShortInALaterScanIsTruncatedForEveryRegion() {
        byte[] jpeg = progressive(480, 360);
        int from = scanData(jpeg, 3);
        byte[] truncated = Arrays.copyOf(jpeg, from + (scanEnd(jpeg, from) - from) / 2);
        // A progressive file's scans all cover the top rows too: a region there is as truncated.
        for (int y : new int[] {0, 160, 320}) {
            Region r = decodeRegion(truncated, 1, 1, 0, y, 100, 40);
            assertEquals(StokeJpeg.WARNING, r.status(), "rows from " + y);
            assertTrue(r.message().contains("Premature end"), r.message());
        }
    }
}
