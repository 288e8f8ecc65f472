package io.stoke.loader.decode;

import io.stoke.loader.testing.JpegMarkers;

/** Rewrites a JPEG's frame header to claim another size: the shape of a decompression bomb. */
final class Bombs {
    private Bombs() {}

    static byte[] withDimensions(byte[] jpeg, int width, int height) {
        byte[] out = jpeg.clone();
        int sof = JpegMarkers.find(out, m -> m >= 0xC0 && m <= 0xC2); // SOF0..SOF2: precision, height, width
        out[sof + 5] = (byte) (height >> 8);
        out[sof + 6] = (byte) height;
        out[sof + 7] = (byte) (width >> 8);
        out[sof + 8] = (byte) width;
        return out;
    }
}
