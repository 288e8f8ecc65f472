package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.JpegDecompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.loader.resample.DecodedImage;
import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The GPU decode's resize on the CUDA and nvJPEG doubles: nvJPEG's decoded images, resized on the
 * "device" with the CPU resampler's tables, against the CPU resampler run on the same decoded
 * pixels. The double runs native/cuda/resize.cu's own source, compiled for the host and run over
 * the launch's grid, so this checks the kernels' arithmetic and indexing as well as the jobs,
 * tables, offsets and bounds; that a GPU runs the PTX to the same bytes is checked on one
 * ({@code stoke gpu-check --decode}).
 */
class DeviceResizeTest {
    static final int CROP = 56;
    static final int SAMPLE = 3 * CROP * CROP;

    CudaTestDouble dbl;
    CudaDriver driver;
    CudaContext context;
    CudaStream stream;
    DeviceKernels kernels;
    Arena arena;
    long allocsBefore;

    @BeforeEach
    void open() {
        dbl = NvjpegDoubles.open("GPU resize");
        driver = dbl.driver();
        context = CudaContext.retainPrimary(driver, 0);
        stream = CudaStream.create(driver);
        kernels = new DeviceKernels(driver);
        arena = Arena.ofConfined();
        allocsBefore = dbl.stat("live_device_allocs");
    }

    @AfterEach
    void close() {
        if (dbl == null) {
            return;
        }
        try {
            assertEquals(0, dbl.stat("kernel_faults"), "a job read or wrote outside device memory");
            kernels.close();
            stream.close();
            context.close();
            arena.close();
            assertEquals(allocsBefore, dbl.stat("live_device_allocs"), "device memory freed");
        } finally {
            dbl.reset();
        }
    }

    MemorySegment jpeg(int w, int h, int subsamp, long seed) {
        MemorySegment rgb = arena.allocate(3L * w * h);
        Random r = new Random(seed);
        for (long i = 0; i < rgb.byteSize(); i++) {
            long p = i / 3;
            rgb.set(JAVA_BYTE, i, (byte) ((p % w) * 3 + (p / w) * 2 + r.nextInt(40)));
        }
        try (JpegCompressor c = new JpegCompressor()) {
            MemorySegment out = arena.allocate(JpegCompressor.maxSize(w, h, subsamp));
            return out.asSlice(0, c.compress(rgb, w, 3 * w, h, TurboJpeg.TJPF_RGB, subsamp, 90, 0, out));
        }
    }

    /** TurboJPEG's decode of {@code file} as RGBX, the resampler's input: the double's nvJPEG decodes the same bytes. */
    MemorySegment rgbx(MemorySegment file, int w, int h) {
        try (JpegDecompressor d = new JpegDecompressor()) {
            MemorySegment dst = arena.allocate(4L * w * h);
            assertEquals(0, d.decompress(file, file.byteSize(), dst, w, 4 * w, h, TurboJpeg.TJPF_RGBX, 0));
            return dst;
        }
    }

    byte[] back(DeviceBuffer out, int i) {
        stream.synchronize();
        MemorySegment host = arena.allocate(SAMPLE);
        out.copyToHost(host, (long) i * SAMPLE);
        return host.toArray(JAVA_BYTE);
    }

    @Test
    void evalAndTrainingCropsOnTheDeviceAreTheResamplersBytesFromTheSamePixels() {
        int[][] sizes = {{100, 75}, {64, 120}, {56, 56}, {40, 30}, {137, 91}};
        List<MemorySegment> files = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            files.add(jpeg(sizes[i][0], sizes[i][1], i % 2 == 0 ? TurboJpeg.TJSAMP_420 : TurboJpeg.TJSAMP_444, i));
        }
        Random random = new Random(7);
        for (TransformSpec.Interpolation interpolation : TransformSpec.Interpolation.values()) {
            TransformSpec spec = TransformSpec.defaults().withResize(64, CROP).withInterpolation(interpolation);
            try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, dbl.nvjpeg(), false, 8, 1 << 20);
                    DeviceResize resize = new DeviceResize(driver, kernels, 2 * sizes.length);
                    Resampler cpu = new Resampler(spec);
                    DeviceBuffer out = DeviceBuffer.allocate(driver, 2L * sizes.length * SAMPLE)) {
                GpuJpegDecoder.Decoded d = dec.decode(files, stream);
                List<ResampleTables> tables = new ArrayList<>();
                List<byte[]> expected = new ArrayList<>();
                MemorySegment host = arena.allocate(SAMPLE);
                resize.begin();
                for (int i = 0; i < sizes.length; i++) {
                    int w = sizes[i][0];
                    int h = sizes[i][1];
                    MemorySegment pixels = rgbx(files.get(i), w, h);
                    ResampleTables eval = new ResampleTables();
                    cpu.evalTables(w, h, eval);
                    cpu.resizeCenterCrop(pixels, w, h, w, h, host, 0);
                    expected.add(host.toArray(JAVA_BYTE));
                    resize.add(d, i, eval, out, 2L * i * SAMPLE);
                    tables.add(eval);
                    CropBox box = new CropBox();
                    int bw = 1 + random.nextInt(w);
                    int bh = 1 + random.nextInt(h);
                    box.set(random.nextInt(w - bw + 1), random.nextInt(h - bh + 1), bw, bh, random.nextBoolean());
                    ResampleTables crop = new ResampleTables();
                    cpu.cropTables(w, h, box, crop);
                    cpu.resizedCropRgb(new DecodedImage().whole(pixels, w, h, w, h), box, host, 0);
                    expected.add(host.toArray(JAVA_BYTE));
                    resize.add(d, i, crop, out, (2L * i + 1) * SAMPLE);
                    tables.add(crop);
                }
                // Work of each image's tables is done on the device, in one launch per pass.
                long kernelsBefore = dbl.stat("kernels");
                resize.launch(stream);
                assertEquals(2, dbl.stat("kernels") - kernelsBefore, "one launch per pass for the whole batch");
                for (int k = 0; k < expected.size(); k++) {
                    assertArrayEquals(expected.get(k), back(out, k), interpolation + " sample " + k);
                }
            }
        }
    }

    @Test
    void aResizeThatReadsPastItsImageOrWritesPastItsBufferIsRefusedBeforeTheDevice() {
        TransformSpec spec = TransformSpec.defaults().withResize(64, CROP);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, dbl.nvjpeg(), false, 2, 1 << 20);
                DeviceResize resize = new DeviceResize(driver, kernels, 2);
                Resampler cpu = new Resampler(spec);
                DeviceBuffer out = DeviceBuffer.allocate(driver, SAMPLE)) {
            GpuJpegDecoder.Decoded d = dec.decode(List.of(jpeg(60, 40, TurboJpeg.TJSAMP_420, 1)), stream);
            ResampleTables larger = new ResampleTables();
            cpu.evalTables(120, 80, larger);
            resize.begin();
            IndexOutOfBoundsException e =
                    assertThrows(IndexOutOfBoundsException.class, () -> resize.add(d, 0, larger, out, 0));
            assertTrue(e.getMessage().contains("of a 60 x 40 image"), e.getMessage());
            ResampleTables own = new ResampleTables();
            cpu.evalTables(60, 40, own);
            assertThrows(IndexOutOfBoundsException.class, () -> resize.add(d, 0, own, out, 1));
            resize.add(d, 0, own, out, 0);
            resize.add(d, 0, own, out, 0);
            assertThrows(IllegalStateException.class, () -> resize.add(d, 0, own, out, 0), "past the batch");
            resize.launch(stream);
            stream.synchronize();
        }
    }

    @Test
    void batchesOneAfterAnotherGrowTheirScratchAndKeepTheirBytes() {
        TransformSpec spec = TransformSpec.defaults().withResize(64, CROP);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, dbl.nvjpeg(), false, 4, 1 << 22);
                DeviceResize resize = new DeviceResize(driver, kernels, 4);
                Resampler cpu = new Resampler(spec);
                DeviceBuffer out = DeviceBuffer.allocate(driver, 4L * SAMPLE)) {
            MemorySegment host = arena.allocate(SAMPLE);
            for (int round = 0; round < 3; round++) {
                int side = 60 << round;
                List<MemorySegment> files = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    files.add(jpeg(side + 3 * i, side - i, TurboJpeg.TJSAMP_420, 10L * round + i));
                }
                GpuJpegDecoder.Decoded d = dec.decode(files, stream);
                resize.begin();
                ResampleTables[] t = new ResampleTables[4];
                for (int i = 0; i < 4; i++) {
                    t[i] = new ResampleTables();
                    cpu.evalTables(side + 3 * i, side - i, t[i]);
                    resize.add(d, i, t[i], out, (long) i * SAMPLE);
                }
                resize.launch(stream);
                for (int i = 0; i < 4; i++) {
                    cpu.resizeCenterCrop(
                            rgbx(files.get(i), side + 3 * i, side - i),
                            side + 3 * i,
                            side - i,
                            side + 3 * i,
                            side - i,
                            host,
                            0);
                    assertArrayEquals(host.toArray(JAVA_BYTE), back(out, i), "round " + round + " image " + i);
                }
            }
        }
    }

    /**
     * Batches staged back to back while the stream lags 3 ms a copy (the device still decoding the
     * batch before): the two stagings take them in turn, and none is rewritten before the copies out
     * of it ran (the double checksums each copy's source when queued and when it runs), so every
     * batch's crops are the resampler's.
     */
    @Test
    void batchesStagedWhileTheStreamLagsReachTheDeviceAsStaged() {
        TransformSpec spec = TransformSpec.defaults().withResize(64, CROP);
        int batches = 5;
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, dbl.nvjpeg(), false, 2 * batches, 1 << 22);
                DeviceResize resize = new DeviceResize(driver, kernels, 2);
                Resampler cpu = new Resampler(spec);
                DeviceBuffer out = DeviceBuffer.allocate(driver, 2L * batches * SAMPLE)) {
            List<MemorySegment> all = new ArrayList<>();
            List<int[]> sizes = new ArrayList<>();
            for (int k = 0; k < 2 * batches; k++) {
                int[] wh = {70 + 13 * (k % 3) + 5 * k, 66 + 7 * (k % 4) - 3 * (k % 2)};
                all.add(jpeg(wh[0], wh[1], TurboJpeg.TJSAMP_420, 100L + k));
                sizes.add(wh);
            }
            GpuJpegDecoder.Decoded d = dec.decode(all, stream);
            stream.synchronize();
            dbl.copyDelayMicros(3000);
            for (int b = 0; b < batches; b++) {
                resize.begin();
                for (int i = 0; i < 2; i++) {
                    int k = 2 * b + i;
                    ResampleTables t = new ResampleTables();
                    cpu.evalTables(sizes.get(k)[0], sizes.get(k)[1], t);
                    resize.add(d, k, t, out, (long) k * SAMPLE);
                }
                resize.launch(stream); // no wait for the stream: the next batch is staged at once
            }
            MemorySegment host = arena.allocate(SAMPLE);
            for (int k = 0; k < 2 * batches; k++) {
                int[] wh = sizes.get(k);
                cpu.resizeCenterCrop(rgbx(all.get(k), wh[0], wh[1]), wh[0], wh[1], wh[0], wh[1], host, 0);
                assertArrayEquals(host.toArray(JAVA_BYTE), back(out, k), "image " + k);
            }
            assertEquals(0, dbl.stat("checksum_mismatches"), "a staging rewritten before its copy ran");
        } finally {
            dbl.copyDelayMicros(0);
        }
    }
}
