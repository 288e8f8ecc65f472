package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** The CPU reference of the device normalisation, against a straightforward computation. */
class DeviceNormalizeReferenceTest {
    static final float[] MEAN = TransformSpec.IMAGENET_MEAN;
    static final float[] STD = TransformSpec.IMAGENET_STD;

    @Test
    void everyByteValueIsWithinRoundingOfTheExactValue() {
        for (int c = 0; c < 3; c++) {
            for (int x = 0; x < 256; x++) {
                float got = NormalizeReference.normalize(x, MEAN[c], STD[c]);
                double exact = (x / 255.0 - MEAN[c]) / STD[c];
                // Rounding x / 255 (at most 2^-25 near 1) is amplified by 1 / std (under 4.5): 1.5e-7, plus
                // the last division's half ulp. A wrong formula or layout is off by far more.
                assertTrue(
                        Math.abs(got - exact) <= 2.5e-7 + Math.ulp((float) exact),
                        "x=" + x + " c=" + c + ": " + got + " vs " + exact);
            }
        }
        assertEquals((0f - 0.485f) / 0.229f, NormalizeReference.normalize(0, MEAN[0], STD[0]));
        assertEquals((1f - 0.406f) / 0.225f, NormalizeReference.normalize(255, MEAN[2], STD[2]));
        assertEquals(NormalizeReference.normalize(200, 0, 1), 200 / 255f, "bytes are unsigned");
    }

    @Test
    void nhwcBecomesNchw() {
        int n = 2;
        int h = 2;
        int w = 3;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate((long) n * h * w * 3);
            byte[][][][] img = new byte[n][h][w][3];
            int v = 0;
            for (int s = 0; s < n; s++) {
                for (int y = 0; y < h; y++) {
                    for (int x = 0; x < w; x++) {
                        for (int c = 0; c < 3; c++) {
                            img[s][y][x][c] = (byte) (v * 7 + 3);
                            src.set(JAVA_BYTE, v++, img[s][y][x][c]);
                        }
                    }
                }
            }
            MemorySegment dst = arena.allocate(4L * n * h * w * 3);
            NormalizeReference.normalize(src, dst, n, h, w, MEAN, STD);
            for (int s = 0; s < n; s++) {
                for (int c = 0; c < 3; c++) {
                    for (int y = 0; y < h; y++) {
                        for (int x = 0; x < w; x++) {
                            float want = ((img[s][y][x][c] & 0xFF) / 255f - MEAN[c]) / STD[c];
                            long at = ((((long) s * 3 + c) * h + y) * w + x);
                            assertEquals(
                                    want, dst.getAtIndex(JAVA_FLOAT, at), "s" + s + " c" + c + " y" + y + " x" + x);
                        }
                    }
                }
            }
        }
    }

    @Test
    void refusesTooSmallBuffersBeforeWriting() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(2 * 2 * 3);
            MemorySegment dst = arena.allocate(4 * 2 * 2 * 3 - 1);
            assertThrows(
                    IndexOutOfBoundsException.class, () -> NormalizeReference.normalize(src, dst, 1, 2, 2, MEAN, STD));
            for (long i = 0; i < dst.byteSize(); i++) {
                assertEquals(0, dst.get(JAVA_BYTE, i));
            }
            assertThrows(
                    IndexOutOfBoundsException.class,
                    () -> NormalizeReference.normalize(src, arena.allocate(1000), 2, 2, 2, MEAN, STD));
        }
    }
}
