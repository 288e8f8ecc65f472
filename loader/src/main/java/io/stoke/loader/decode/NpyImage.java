package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.loader.format.NpyHeader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/**
 * Checks a raw sample, a NumPy {@code .npy} array as {@code stoke pack --format raw} writes it, and
 * finds its pixels: uint8, C order, shape {@code (side, side, 3)}. The header NumPy writes for that
 * shape is fixed, so the common case is one comparison of bytes with no allocation; any other
 * header is parsed (version 1, 2 or 3), allocating, to say what it holds.
 */
final class NpyImage {
    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};

    private final int side;
    private final byte[] expected;
    private long pixelsOffset;
    private String message;

    NpyImage(int side) {
        this.side = side;
        this.expected = canonicalHeader(side);
    }

    /** The header {@code numpy.save} writes for a uint8 array of shape (side, side, 3): version 1.0. */
    static byte[] canonicalHeader(int side) {
        return NpyHeader.uint8(side, side, 3);
    }

    /** Whether {@code npy[0, size)} holds exactly a (side, side, 3) uint8 image; then {@link #pixelsOffset()} is set. */
    boolean check(MemorySegment npy, long size) {
        message = null;
        long pixels = (long) side * side * 3;
        if (size == expected.length + pixels && matches(npy, expected)) {
            pixelsOffset = expected.length;
            return true;
        }
        return parse(npy, size, pixels);
    }

    private static boolean matches(MemorySegment npy, byte[] expected) {
        for (int i = 0; i < expected.length; i++) {
            if (npy.get(JAVA_BYTE, i) != expected[i]) {
                return false;
            }
        }
        return true;
    }

    private boolean parse(MemorySegment npy, long size, long pixels) {
        if (size < 10 || !matches(npy, MAGIC)) {
            message = "not a .npy file";
            return false;
        }
        int major = npy.get(JAVA_BYTE, 6) & 0xFF;
        long headerLength;
        int start;
        if (major == 1) {
            headerLength = (npy.get(JAVA_BYTE, 8) & 0xFF) | (npy.get(JAVA_BYTE, 9) & 0xFF) << 8;
            start = 10;
        } else if ((major == 2 || major == 3) && size >= 12) {
            headerLength = (npy.get(JAVA_BYTE, 8) & 0xFFL)
                    | (npy.get(JAVA_BYTE, 9) & 0xFFL) << 8
                    | (npy.get(JAVA_BYTE, 10) & 0xFFL) << 16
                    | (npy.get(JAVA_BYTE, 11) & 0xFFL) << 24;
            start = 12;
        } else {
            message = ".npy version " + major + " is not 1, 2 or 3";
            return false;
        }
        if (start + headerLength > size || headerLength > 65536) {
            message = ".npy header of " + headerLength + " bytes does not fit";
            return false;
        }
        byte[] h = new byte[(int) headerLength];
        MemorySegment.copy(npy, JAVA_BYTE, start, h, 0, h.length);
        String header = new String(h, StandardCharsets.ISO_8859_1).replace(" ", "");
        boolean u8 =
                header.contains("'descr':'|u1'") || header.contains("'descr':'u1'") || header.contains("'descr':'<u1'");
        boolean cOrder = header.contains("'fortran_order':False");
        String shape = "'shape':(" + side + "," + side + ",3)";
        if (!u8 || !cOrder || !header.contains(shape)) {
            message = ".npy holds " + header.strip() + ", not uint8 C-order (" + side + ", " + side + ", 3)";
            return false;
        }
        if (size - start - headerLength != pixels) {
            message = ".npy data is " + (size - start - headerLength) + " bytes, not " + pixels;
            return false;
        }
        pixelsOffset = start + headerLength;
        return true;
    }

    long pixelsOffset() {
        return pixelsOffset;
    }

    String message() {
        return message;
    }
}
