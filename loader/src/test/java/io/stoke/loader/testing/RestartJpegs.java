package io.stoke.loader.testing;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.StokeJpeg;
import io.stoke.ffm.TurboJpeg;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** JPEGs with restart markers, from Stoke's encoder ({@code stoke_encode_rgb}), and ways to break them. */
public final class RestartJpegs {
    private RestartJpegs() {}

    /** {@code rgb} (w*h*3) encoded at {@code quality} with a restart marker every {@code restartMcus} MCUs. */
    public static byte[] encode(byte[] rgb, int w, int h, int subsamp, int quality, int restartMcus) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(rgb.length);
            MemorySegment.copy(rgb, 0, src, JAVA_BYTE, 0, rgb.length);
            long capacity =
                    JpegCompressor.maxSize(w, h, subsamp == StokeJpeg.SAMP_GRAY ? TurboJpeg.TJSAMP_444 : subsamp)
                            + 4L * w * h / 64
                            + 4096;
            MemorySegment dst = arena.allocate(capacity);
            MemorySegment size = arena.allocate(JAVA_LONG);
            MemorySegment message = arena.allocate(256);
            int rc = StokeJpeg.encodeRgb(
                    src, w, 3 * w, h, subsamp, quality, restartMcus, dst, capacity, size, message, 256);
            if (rc != StokeJpeg.OK) {
                throw new IllegalStateException(message.getString(0));
            }
            return dst.asSlice(0, size.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
        }
    }

    /** The offset of each restart marker's 0xFF byte in the scan, in order. */
    public static int[] markers(byte[] jpeg) {
        int sos = JpegMarkers.find(jpeg, m -> m == 0xDA);
        int from = sos + 2 + JpegMarkers.length(jpeg, sos);
        int[] found = new int[jpeg.length / 2];
        int n = 0;
        for (int i = from; i + 1 < jpeg.length; i++) {
            int next = jpeg[i + 1] & 0xFF;
            if ((jpeg[i] & 0xFF) == 0xFF && next >= 0xD0 && next <= 0xD7) {
                found[n++] = i;
            }
        }
        return java.util.Arrays.copyOf(found, n);
    }

    /** The offset of the DRI segment's interval field. */
    public static int intervalField(byte[] jpeg) {
        return JpegMarkers.find(jpeg, m -> m == 0xDD) + 4;
    }
}
