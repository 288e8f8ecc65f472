package io.stoke.loader.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * NumPy's {@code .npy} header, format version 1.0, for a C-ordered array: what {@code numpy.load}
 * reads back without any other file, byte for byte what {@code numpy.save} writes. The header is
 * padded with spaces to a multiple of 64 bytes (NumPy's own alignment), so the data that follows
 * starts aligned. Written once here for every {@code .npy} Stoke writes or expects: raw shards,
 * the raw reader's fast check, and {@code stoke embed}'s embeddings.
 */
public final class NpyHeader {
    private static final int ALIGNMENT = 64;

    private NpyHeader() {}

    /** The header of a uint8 ({@code |u1}) array of {@code shape}, C order. */
    public static byte[] uint8(long... shape) {
        return of("|u1", shape);
    }

    /** The header of a little-endian float32 ({@code <f4}) array of {@code shape}, C order. */
    public static byte[] float32(long... shape) {
        return of("<f4", shape);
    }

    private static byte[] of(String descr, long... shape) {
        if (shape.length == 0) {
            throw new IllegalArgumentException("a shape needs at least one dimension");
        }
        StringBuilder dims = new StringBuilder();
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension " + d);
            }
            dims.append(d).append(", ");
        }
        // NumPy writes a 1-tuple as "(n,)" and longer ones as "(a, b, c)".
        String tuple = shape.length == 1 ? "(" + shape[0] + ",)" : "(" + dims.substring(0, dims.length() - 2) + ")";
        String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + tuple + ", }";
        int unpadded = 10 + dict.length() + 1;
        int total = (unpadded + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        if (total - 10 > 0xFFFF) {
            throw new IllegalArgumentException("npy header longer than version 1.0 allows");
        }
        ByteBuffer b = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93)
                .put("NUMPY".getBytes(StandardCharsets.US_ASCII))
                .put((byte) 1)
                .put((byte) 0);
        b.putShort((short) (total - 10));
        b.put(dict.getBytes(StandardCharsets.US_ASCII));
        while (b.position() < total - 1) {
            b.put((byte) ' ');
        }
        b.put((byte) '\n');
        return b.array();
    }
}
