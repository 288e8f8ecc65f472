package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.MemorySegment;

/**
 * Whether a JPEG's data reaches its end: an EOI marker after its first scan. A file cut short (an
 * interrupted download or copy) has none there. libjpeg names such a file on the CPU ("Premature end
 * of JPEG file"), where nvJPEG may decode it without an error and fill in what is missing, so the GPU
 * decode sends it to the CPU, which decodes it or names it exactly as the loader does.
 *
 * <p>Only the markers before the first SOS are walked (by their lengths), then the last EOI is looked
 * for from the file's end: no entropy-coded byte is read when the file ends in its EOI, as nearly all
 * do. An EXIF thumbnail's EOI lies before the main image's SOS, so it does not count. Every read is
 * inside {@code [0, n)}; a malformed header answers false, and the CPU names the file.
 */
final class JpegEnd {
    private static final int SOS = 0xDA;
    private static final int EOI = 0xD9;

    private JpegEnd() {}

    /** Whether the JPEG in {@code bytes[0, n)} has an EOI after its first SOS. */
    static boolean complete(MemorySegment bytes, long n) {
        long sos = firstScan(bytes, n);
        if (sos < 0) {
            return false;
        }
        for (long p = n - 2; p > sos; p--) {
            if (at(bytes, p) == 0xFF && at(bytes, p + 1) == EOI) {
                return true;
            }
        }
        return false;
    }

    /** The offset of the first SOS marker, or -1 when the header ends or breaks before one. */
    private static long firstScan(MemorySegment bytes, long n) {
        if (n < 4 || at(bytes, 0) != 0xFF || at(bytes, 1) != 0xD8) {
            return -1;
        }
        long p = 2;
        while (p + 1 < n) {
            if (at(bytes, p) != 0xFF) {
                return -1;
            }
            int m = at(bytes, p + 1);
            if (m == 0xFF) {
                p++; // fill byte before a marker
                continue;
            }
            if (m == SOS) {
                return p;
            }
            if (m == 0x01 || (m >= 0xD0 && m <= 0xD9)) {
                p += 2; // a marker with no segment
                continue;
            }
            if (p + 3 >= n) {
                return -1;
            }
            int length = at(bytes, p + 2) << 8 | at(bytes, p + 3);
            if (length < 2) {
                return -1;
            }
            p += 2 + length; // strictly forward: the walk ends
        }
        return -1;
    }

    private static int at(MemorySegment bytes, long i) {
        return bytes.get(JAVA_BYTE, i) & 0xFF;
    }
}
