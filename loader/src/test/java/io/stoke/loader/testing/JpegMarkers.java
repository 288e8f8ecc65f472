package io.stoke.loader.testing;

import java.util.function.IntPredicate;

/** The marker segments of a JPEG's header, walked from SOI for the tests that read or rewrite them. */
public final class JpegMarkers {
    private JpegMarkers() {}

    /**
     * The offset of the first marker (its 0xFF byte) from SOI on for which {@code wanted} holds,
     * walking segment by segment; the SOS segment is the last one walked.
     */
    public static int find(byte[] jpeg, IntPredicate wanted) {
        for (int i = 2; i + 3 < jpeg.length; ) {
            if ((jpeg[i] & 0xFF) != 0xFF) {
                throw new IllegalArgumentException("lost marker sync at " + i);
            }
            int marker = jpeg[i + 1] & 0xFF;
            if (wanted.test(marker)) {
                return i;
            }
            if (marker == 0xDA) {
                break;
            }
            i += 2 + length(jpeg, i);
        }
        throw new IllegalArgumentException("no such marker before the scan data");
    }

    /** The length field of the segment whose marker is at {@code at} (it counts itself, not the marker). */
    public static int length(byte[] jpeg, int at) {
        return ((jpeg[at + 2] & 0xFF) << 8) | (jpeg[at + 3] & 0xFF);
    }
}
