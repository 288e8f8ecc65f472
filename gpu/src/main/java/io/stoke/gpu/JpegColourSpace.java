package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.MemorySegment;

/**
 * Whether a three-component JPEG is coded in RGB rather than YCbCr, as libjpeg decides it from the
 * markers before the first scan ({@code jdapimin.c}'s {@code default_decompress_parms}): a JFIF
 * marker means YCbCr; else an Adobe marker's transform (0 RGB, 1 YCbCr); else the components' IDs
 * ('R', 'G', 'B' RGB, anything else YCbCr). nvJPEG's decoders and the colour step convert every
 * three-component file as YCbCr, so the GPU decode leaves an RGB-coded one to the CPU, which decodes
 * it as the loader does.
 *
 * <p>Only the markers before the first SOS are walked, by their lengths, and only inside {@code [0,
 * n)}; a malformed header answers false (nvJPEG's own reading then judges the file).
 */
final class JpegColourSpace {
    private static final int SOS = 0xDA;
    private static final int APP0 = 0xE0;
    private static final int APP14 = 0xEE;

    private JpegColourSpace() {}

    /**
     * Whether the JPEG of {@code n} bytes at {@code address} in {@code memory} (a segment the
     * address is an offset into: the whole address space, for files handed by address) is a
     * three-component file coded in RGB.
     */
    static boolean rgbCoded(MemorySegment memory, long address, long n) {
        if (n < 4 || at(memory, address) != 0xFF || at(memory, address + 1) != 0xD8) {
            return false;
        }
        boolean jfif = false;
        int adobeTransform = -1;
        int components = 0;
        int id0 = 0;
        int id1 = 0;
        int id2 = 0;
        long p = 2;
        while (p + 3 < n) {
            if (at(memory, address + p) != 0xFF) {
                return false;
            }
            int m = at(memory, address + p + 1);
            if (m == 0xFF) {
                p++; // fill byte before a marker
                continue;
            }
            if (m == SOS || m == 0xD9) {
                break;
            }
            if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
                p += 2; // a marker with no segment
                continue;
            }
            int length = at(memory, address + p + 2) << 8 | at(memory, address + p + 3);
            if (length < 2 || p + 2 + length > n) {
                return false;
            }
            long data = address + p + 4;
            int dataLength = length - 2;
            if (m == APP0 && dataLength >= 14 && is(memory, data, "JFIF") && at(memory, data + 4) == 0) {
                jfif = true; // libjpeg's examine_app0: 14 bytes at least
            } else if (m == APP14 && dataLength >= 12 && is(memory, data, "Adobe")) {
                adobeTransform = at(memory, data + 11); // examine_app14: 12 bytes at least
            } else if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC && dataLength >= 6) {
                components = at(memory, data + 5); // SOFn: precision, height, width, components, then 3 bytes each
                if (components == 3 && dataLength >= 6 + 9) {
                    id0 = at(memory, data + 6);
                    id1 = at(memory, data + 9);
                    id2 = at(memory, data + 12);
                }
            }
            p += 2 + length; // strictly forward: the walk ends
        }
        if (components != 3 || jfif) {
            return false;
        }
        if (adobeTransform >= 0) {
            return adobeTransform == 0;
        }
        return id0 == 'R' && id1 == 'G' && id2 == 'B';
    }

    private static boolean is(MemorySegment memory, long at, String ascii) {
        for (int i = 0; i < ascii.length(); i++) {
            if (at(memory, at + i) != ascii.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    private static int at(MemorySegment memory, long i) {
        return memory.get(JAVA_BYTE, i) & 0xFF;
    }
}
