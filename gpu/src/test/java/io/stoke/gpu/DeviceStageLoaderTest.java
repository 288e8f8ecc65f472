package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.loader.Batch;
import io.stoke.loader.BatchView;
import io.stoke.loader.Loader;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Loader (JPEG decoding by libjpeg-turbo into the ring) behind the GPU stage on the test
 * double: the device's float32 batches must equal, bit for bit, what the host loader produces
 * with FLOAT32_CHW output for the same files.
 */
class DeviceStageLoaderTest {
    @Test
    void deviceNormalisationEqualsTheHostLoadersFloatOutput(@TempDir Path root) throws Exception {
        String reason = CudaTestDouble.unavailableReason(DeviceStageTest.DOUBLE_DIR);
        if (reason != null) {
            System.err.println("[stoke] SKIPPING GPU stage loader test: " + reason);
        }
        assumeTrue(reason == null, reason);
        CudaTestDouble dbl = CudaTestDouble.open(DeviceStageTest.DOUBLE_DIR);
        dbl.reset();
        writeDataset(root);
        TransformSpec uint8 = TransformSpec.defaults().withResize(20, 16);
        TransformSpec float32 = uint8.withOutput(TransformSpec.Output.FLOAT32_CHW);

        List<float[]> hostFloats = new ArrayList<>();
        List<int[]> hostLabels = new ArrayList<>();
        try (Loader host = Loader.imageFolder(root)
                .batchSize(4)
                .workers(1)
                .transform(float32)
                .build()) {
            for (Batch b : host) {
                try (b) {
                    hostFloats.add(b.pixels().toArray(JAVA_FLOAT));
                    int[] l = new int[b.size()];
                    for (int i = 0; i < l.length; i++) {
                        l[i] = b.label(i);
                    }
                    hostLabels.add(l);
                }
            }
        }

        try (Loader loader = Loader.imageFolder(root)
                        .batchSize(4)
                        .workers(2)
                        .slots(3)
                        .transform(uint8)
                        .build();
                DeviceStage stage = DeviceStage.builder(loader)
                        .driver(dbl.driver())
                        .inFlight(2)
                        .normalizeOnDevice()
                        .build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(4L * 4 * 3 * 16 * 16);
            for (int k = 0; k < hostFloats.size(); k++) {
                try (DeviceBatch b = stage.next()) {
                    assertEquals(k, b.sequence());
                    assertArrayEquals(new long[] {hostLabels.get(k).length, 3, 16, 16}, b.shape());
                    // The host batch's figures travel with it: the uint8 slot it was copied from.
                    BatchView view = b;
                    assertEquals(
                            hostLabels.get(k).length * 16L * 16 * 3,
                            view.stats().pixelBytes());
                    assertTrue(
                            view.stats().decodeNanos() > 0 && view.stats().sourceBytes() > 0,
                            view.stats().toString());
                    view.awaitReady();
                    b.copyToHost(got);
                    float[] want = hostFloats.get(k);
                    float[] dev = got.asSlice(0, 4L * want.length).toArray(JAVA_FLOAT);
                    for (int i = 0; i < want.length; i++) {
                        assertEquals(
                                Float.floatToRawIntBits(want[i]),
                                Float.floatToRawIntBits(dev[i]),
                                "batch " + k + " value " + i + ": host " + want[i] + ", device " + dev[i]);
                    }
                    for (int i = 0; i < b.size(); i++) {
                        assertEquals(hostLabels.get(k)[i], b.label(i));
                    }
                }
            }
            assertNull(stage.next());
            assertEquals(0, dbl.stat("pageable_async_copies"), "copies come from the pinned ring");
            assertEquals(0, dbl.stat("checksum_mismatches"));
        } finally {
            dbl.reset();
        }
    }

    /** 11 small JPEGs in two classes, with gradients so that resizing has something to do. */
    static void writeDataset(Path root) throws Exception {
        int w = 37;
        int h = 29;
        try (JpegCompressor jc = new JpegCompressor();
                Arena arena = Arena.ofConfined()) {
            MemorySegment rgb = arena.allocate(w * h * 3L);
            MemorySegment jpeg = arena.allocate(JpegCompressor.maxSize(w, h, TurboJpeg.TJSAMP_444));
            for (int i = 0; i < 11; i++) {
                for (int y = 0; y < h; y++) {
                    for (int x = 0; x < w; x++) {
                        long o = (y * (long) w + x) * 3;
                        rgb.set(JAVA_BYTE, o, (byte) (x * 7 + i * 20));
                        rgb.set(JAVA_BYTE, o + 1, (byte) (y * 9 + i * 3));
                        rgb.set(JAVA_BYTE, o + 2, (byte) ((x ^ y) * 5 + i));
                    }
                }
                long n = jc.compress(rgb, w, w * 3, h, TurboJpeg.TJPF_RGB, TurboJpeg.TJSAMP_444, 90, 0, jpeg);
                Path dir = root.resolve(i % 2 == 0 ? "cat" : "dog");
                Files.createDirectories(dir);
                Files.write(
                        dir.resolve(String.format("%02d.jpg", i)),
                        jpeg.asSlice(0, n).toArray(JAVA_BYTE));
            }
        }
    }
}
