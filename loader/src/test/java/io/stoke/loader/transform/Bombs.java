package io.stoke.loader.transform;

/** Rewrites a JPEG's frame header to claim another size: the shape of a decompression bomb. */
final class Bombs {
    private Bombs() {
    }

    static byte[] withDimensions(byte[] jpeg, int width, int height) {
        byte[] out = jpeg.clone();
        for (int i = 2; i + 8 < out.length; ) {
            if ((out[i] & 0xFF) != 0xFF) {
                throw new IllegalArgumentException("lost marker sync at " + i);
            }
            int marker = out[i + 1] & 0xFF;
            int length = ((out[i + 2] & 0xFF) << 8) | (out[i + 3] & 0xFF);
            if (marker >= 0xC0 && marker <= 0xC2) { // SOF0..SOF2: precision, height, width
                out[i + 5] = (byte) (height >> 8);
                out[i + 6] = (byte) height;
                out[i + 7] = (byte) (width >> 8);
                out[i + 8] = (byte) width;
                return out;
            }
            i += 2 + length;
        }
        throw new IllegalArgumentException("no SOF marker");
    }
}
