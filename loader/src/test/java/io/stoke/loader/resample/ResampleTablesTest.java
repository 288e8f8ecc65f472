package io.stoke.loader.resample;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The tables a device applies (the GPU decode's resize) reproduce the resampler's own bytes: applied
 * here by {@link #apply}, the two passes as the kernels run them (3-byte RGB in, as nvJPEG writes it;
 * PIL's rounding), they must give what {@link Resampler#resizeCenterCrop} and
 * {@link Resampler#resizedCropRgb} write from the same pixels, byte for byte.
 */
class ResampleTablesTest {
    /** The kernels' two passes over {@code rgb} ({@code w} pixels a row, 3 bytes each) with the tables as written. */
    static byte[] apply(byte[] rgb, int w, ResampleTables t) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment tab = a.allocate(4L * t.ints());
            t.writeTo(tab, 0);
            int cols = t.cols();
            int rows = t.rows();
            int[] tmp = new int[4 * cols * rows];
            int hw = 2 * cols;
            for (int r = 0; r < rows; r++) {
                int row = (t.yFirst() + r) * w * 3;
                for (int x = 0; x < cols; x++) {
                    int first = tab.getAtIndex(JAVA_INT, 2 * x);
                    int n = tab.getAtIndex(JAVA_INT, 2 * x + 1);
                    for (int c = 0; c < 3; c++) {
                        int s = ResampleKernels.HALF;
                        for (int k = 0; k < n; k++) {
                            s += (rgb[row + 3 * (first + k) + c] & 0xFF)
                                    * tab.getAtIndex(JAVA_INT, hw + x * t.hTaps() + k);
                        }
                        tmp[4 * (r * cols + x) + c] = ScalarKernels.clip8(s) & 0xFF;
                    }
                }
            }
            int v = t.verticalOffset();
            int vw = v + 2 * t.outRows();
            byte[] out = new byte[3 * cols * t.outRows()];
            for (int y = 0; y < t.outRows(); y++) {
                int first = tab.getAtIndex(JAVA_INT, v + 2 * y) - t.yFirst();
                int n = tab.getAtIndex(JAVA_INT, v + 2 * y + 1);
                for (int x = 0; x < cols; x++) {
                    for (int c = 0; c < 3; c++) {
                        int s = ResampleKernels.HALF;
                        for (int k = 0; k < n; k++) {
                            s += tmp[4 * ((first + k) * cols + x) + c]
                                    * tab.getAtIndex(JAVA_INT, vw + y * t.vTaps() + k);
                        }
                        out[3 * (y * cols + x) + c] = ScalarKernels.clip8(s);
                    }
                }
            }
            return out;
        }
    }

    @ParameterizedTest
    @CsvSource({
        "bilinear, 500, 375",
        "bilinear, 333, 500",
        "bilinear, 256, 256",
        "bilinear, 120, 90",
        "bicubic, 500, 375",
        "bicubic, 231, 640",
        "nearest, 500, 375",
        "nearest, 97, 300"
    })
    void eachGeometrysTablesGiveTheResamplersBytes(String mode, int w, int h) {
        TransformSpec spec = TransformSpec.defaults()
                .withResize(256, 224)
                .withInterpolation(TransformSpec.Interpolation.valueOf(mode.toUpperCase(Locale.ROOT)));
        Random random = new Random(w * 31L + h);
        byte[] rgb = new byte[3 * w * h];
        random.nextBytes(rgb);
        try (Arena a = Arena.ofConfined();
                Resampler r = new Resampler(spec)) {
            MemorySegment rgbx = a.allocate(4L * w * h);
            for (int i = 0; i < w * h; i++) {
                MemorySegment.copy(rgb, 3 * i, rgbx, JAVA_BYTE, 4L * i, 3);
            }
            MemorySegment dst = a.allocate(3L * 224 * 224);
            ResampleTables t = new ResampleTables();

            r.resizeCenterCrop(rgbx, w, h, w, h, dst, 0);
            r.evalTables(w, h, t);
            assertEquals(224, t.cols());
            assertEquals(224, t.outRows());
            assertArrayEquals(dst.toArray(JAVA_BYTE), apply(rgb, w, t), "eval " + mode + " " + w + "x" + h);

            CropBox box = new CropBox();
            for (int i = 0; i < 6; i++) {
                int bw = 1 + random.nextInt(w);
                int bh = 1 + random.nextInt(h);
                box.set(random.nextInt(w - bw + 1), random.nextInt(h - bh + 1), bw, bh, i % 2 == 1);
                r.resizedCropRgb(new DecodedImage().whole(rgbx, w, h, w, h), box, dst, 0);
                r.cropTables(w, h, box, t);
                assertArrayEquals(
                        dst.toArray(JAVA_BYTE), apply(rgb, w, t), "crop " + i + " " + mode + " " + w + "x" + h);
            }
            box.set(w - 2, 0, 3, 1, false);
            CropBox outside = box;
            assertThrows(IllegalArgumentException.class, () -> r.cropTables(w, h, outside, t), "a box past the image");
        }
    }
}
