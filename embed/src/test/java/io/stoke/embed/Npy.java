package io.stoke.embed;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads a float32 C-order .npy file of two dimensions (what the tests compare), checking its header. */
final class Npy {
    final long rows;
    final long columns;
    final float[] values;

    private Npy(long rows, long columns, float[] values) {
        this.rows = rows;
        this.columns = columns;
        this.values = values;
    }

    static Npy read(Path file) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        byte[] magic = new byte[6];
        b.get(magic);
        if (magic[0] != (byte) 0x93 || !new String(magic, 1, 5, StandardCharsets.US_ASCII).equals("NUMPY")) {
            throw new IOException(file + ": not an .npy file");
        }
        int major = b.get();
        b.get();
        int headerLength = major == 1 ? Short.toUnsignedInt(b.getShort()) : b.getInt();
        byte[] h = new byte[headerLength];
        b.get(h);
        String header = new String(h, StandardCharsets.US_ASCII);
        if (!header.contains("'descr': '<f4'")
                || !header.contains("'fortran_order': False")
                || !header.endsWith("\n")
                || b.position() % 64 != 0) {
            throw new IOException(file + ": unexpected header " + header);
        }
        String shape = header.substring(header.indexOf("'shape': (") + 10, header.indexOf(')'));
        String[] dims = shape.split(",");
        long rows = Long.parseLong(dims[0].trim());
        long columns = Long.parseLong(dims[1].trim());
        float[] values = new float[(int) (rows * columns)];
        b.asFloatBuffer().get(values);
        return new Npy(rows, columns, values);
    }

    float get(long row, long column) {
        return values[(int) (row * columns + column)];
    }
}
