package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.JpegDecompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.cuda.Nvjpeg;
import io.stoke.ffm.cuda.NvjpegException;
import io.stoke.ffm.testing.CudaTestDouble;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The GPU decode's logic, on the nvJPEG and CUDA test doubles (ffm-bindings/src/test/native/cuda-double):
 * which file goes to the GPU and which to the CPU (and why), where each image lands in device memory,
 * stream order, failures and lifetimes. The double decodes with libjpeg, so its pixels equal
 * TurboJPEG's: a difference here is a wiring fault (a wrong file, offset, size or pitch). This is not
 * a GPU verification: nvJPEG's own pixels are checked on a device (docs/gpu.md).
 */
class GpuJpegDecoderTest {
    CudaTestDouble dbl;
    CudaDriver driver;
    Nvjpeg nvjpeg;
    CudaContext context;
    CudaStream stream;
    Arena arena;
    long deviceAllocsBefore;

    @BeforeEach
    void open() {
        dbl = NvjpegDoubles.open("GPU decode");
        driver = dbl.driver();
        nvjpeg = dbl.nvjpeg();
        context = CudaContext.retainPrimary(driver, 0);
        stream = CudaStream.create(driver);
        arena = Arena.ofConfined();
        deviceAllocsBefore = dbl.stat("live_device_allocs");
    }

    @AfterEach
    void close() {
        if (dbl == null) {
            return;
        }
        try {
            stream.close();
            context.close();
            arena.close();
            assertEquals(deviceAllocsBefore, dbl.stat("live_device_allocs"), "device memory freed");
            NvjpegDoubles.assertNoneLive(dbl);
            assertEquals(0, dbl.nvjpegStat("state_overlaps"), "no nvJPEG state in two calls at once");
        } finally {
            dbl.reset();
        }
    }

    /** A JPEG of a smooth pattern with noise (so that every block has detail), in native memory. */
    MemorySegment jpeg(int w, int h, int subsamp, int flags, long seed) {
        boolean gray = subsamp == TurboJpeg.TJSAMP_GRAY;
        MemorySegment rgb = arena.allocate(3L * w * h);
        Random r = new Random(seed);
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                for (int c = 0; c < 3; c++) {
                    int v = (x * (3 + c) + y * (5 - c)) % 256 + r.nextInt(24) - 12;
                    rgb.set(JAVA_BYTE, 3L * (y * w + x) + c, (byte) Math.max(0, Math.min(255, v)));
                }
            }
        }
        try (JpegCompressor c = new JpegCompressor()) {
            MemorySegment out = arena.allocate(JpegCompressor.maxSize(w, h, subsamp));
            long n = c.compress(rgb, w, 3 * w, h, TurboJpeg.TJPF_RGB, subsamp, 90, flags, out);
            return out.asSlice(0, n);
        }
        // gray: TurboJPEG writes a 1-component file from the RGB's luminance.
    }

    MemorySegment cmykJpeg(int w, int h) {
        MemorySegment cmyk = arena.allocate(4L * w * h);
        for (long i = 0; i < cmyk.byteSize(); i++) {
            cmyk.set(JAVA_BYTE, i, (byte) (i * 7));
        }
        try (JpegCompressor c = new JpegCompressor()) {
            MemorySegment out = arena.allocate(JpegCompressor.maxSize(w, h, TurboJpeg.TJSAMP_444));
            long n = c.compress(cmyk, w, 4 * w, h, TurboJpeg.TJPF_CMYK, TurboJpeg.TJSAMP_444, 90, 0, out);
            return out.asSlice(0, n);
        }
    }

    MemorySegment png(int w, int h) throws IOException {
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ImageIO.write(img, "png", bytes);
        return arena.allocateFrom(JAVA_BYTE, bytes.toByteArray());
    }

    /** TurboJPEG's decode of {@code file} to packed RGB: the CPU's pixels, which the double's must equal. */
    static byte[] cpuDecode(MemorySegment file, int w, int h) {
        try (JpegDecompressor d = new JpegDecompressor();
                Arena a = Arena.ofConfined()) {
            MemorySegment dst = a.allocate(3L * w * h);
            assertEquals(0, d.decompress(file, file.byteSize(), dst, w, 3 * w, h, TurboJpeg.TJPF_RGB, 0));
            return dst.toArray(JAVA_BYTE);
        }
    }

    byte[] gpuPixels(GpuJpegDecoder.Decoded d, int i) {
        MemorySegment host = arena.allocate(3L * d.width(i) * d.height(i));
        d.copyToHost(i, stream, host);
        return host.toArray(JAVA_BYTE);
    }

    /**
     * The decode stage's way: a batch's files end to end in one buffer, handed by address and length.
     * Each lands as the CPU decodes it, and a warm batch allocates nothing on the caller's thread, so
     * nothing per file (a segment per file was an object per image).
     */
    @Test
    void filesHandedByAddressDecodeAsTheCpuDoesAndAllocateNothingOnceWarm() {
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isThreadAllocatedMemorySupported(), "no per-thread allocation count here");
        threads.setThreadAllocatedMemoryEnabled(true);
        int n = 16;
        List<MemorySegment> files = new ArrayList<>();
        long total = 0;
        for (int i = 0; i < n; i++) {
            files.add(jpeg(40 + 3 * i, 30 + i, i % 2 == 0 ? TurboJpeg.TJSAMP_420 : TurboJpeg.TJSAMP_444, 0, i));
            total += files.get(i).byteSize();
        }
        MemorySegment buffer = arena.allocate(total + 7);
        long[] addresses = new long[n];
        long[] lengths = new long[n];
        long at = 7; // no file at an aligned start
        for (int i = 0; i < n; i++) {
            MemorySegment.copy(files.get(i), 0, buffer, at, files.get(i).byteSize());
            addresses[i] = buffer.address() + at;
            lengths[i] = files.get(i).byteSize();
            at += lengths[i];
        }
        GpuJpegDecoder.Files handed = new GpuJpegDecoder.Files() {
            @Override
            public int count() {
                return n;
            }

            @Override
            public long address(int i) {
                return addresses[i];
            }

            @Override
            public long length(int i) {
                return lengths[i];
            }
        };
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, n, 1 << 20)) {
            GpuJpegDecoder.Decoded d = dec.decode(handed, stream);
            for (int i = 0; i < n; i++) {
                assertTrue(d.onGpu(i), "file " + i + ": " + d.cpuReason(i));
                assertArrayEquals(
                        cpuDecode(files.get(i), d.width(i), d.height(i)), gpuPixels(d, i), "pixels of file " + i);
            }
            // Warm: the loops compiled, and each downcall's method handle past the JDK's customisation
            // (a new lambda form, allocated by the calling thread at its 127th call).
            for (int k = 0; k < 200; k++) {
                dec.decode(handed, stream);
            }
            // A window of 20 batches, until one allocates nothing: on a loaded machine the JIT may
            // still be compiling after the warm-up (an interpreted or C1 frame allocates what C2's
            // escape analysis removes). An allocation per batch shows in every window, and fails.
            long allocated = -1;
            for (int window = 0; window < 50 && allocated != 0; window++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int k = 0; k < 20; k++) {
                    dec.decode(handed, stream);
                }
                allocated = threads.getCurrentThreadAllocatedBytes() - before;
            }
            assertEquals(0, allocated, "bytes allocated by 20 warm batches, in the last of 50 windows");
        }
    }

    @Test
    void everyFileNvjpegTakesLandsInDeviceMemoryAsTheCpuDecodesIt() {
        int[][] shapes = {
            {37, 23, TurboJpeg.TJSAMP_444},
            {64, 48, TurboJpeg.TJSAMP_420},
            {101, 75, TurboJpeg.TJSAMP_422},
            {31, 17, TurboJpeg.TJSAMP_GRAY},
            {50, 41, TurboJpeg.TJSAMP_440},
            {200, 150, TurboJpeg.TJSAMP_420}
        };
        List<MemorySegment> files = new ArrayList<>();
        for (int i = 0; i < shapes.length; i++) {
            files.add(jpeg(shapes[i][0], shapes[i][1], shapes[i][2], 0, i));
        }
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 8, 1 << 20)) {
            assertEquals(GpuJpegDecoder.Backend.GPU_HYBRID, dec.backend());
            assertNull(dec.backendNote(), "the hybrid decoder was asked for");
            // Opening decoded the colour check's one image, in one call: counted from here.
            long images = dbl.nvjpegStat("nvjpeg_images");
            long calls = dbl.nvjpegStat("nvjpeg_batches");
            GpuJpegDecoder.Decoded d = dec.decode(files, stream);
            assertEquals(shapes.length, d.size());
            for (int i = 0; i < shapes.length; i++) {
                assertTrue(d.onGpu(i), "file " + i + ": " + d.cpuReason(i));
                assertEquals(shapes[i][0], d.width(i));
                assertEquals(shapes[i][1], d.height(i));
                assertEquals(3L * shapes[i][0], d.pitch(i));
                assertEquals(0, d.deviceAddress(i) % GpuJpegDecoder.ALIGNMENT, "aligned");
                assertArrayEquals(
                        cpuDecode(files.get(i), shapes[i][0], shapes[i][1]), gpuPixels(d, i), "pixels of file " + i);
            }
            assertEquals(images + shapes.length, dbl.nvjpegStat("nvjpeg_images"));
            assertEquals(calls + 1, dbl.nvjpegStat("nvjpeg_batches"), "one batched call");
        }
    }

    @Test
    void whatNvjpegCannotTakeIsLeftToTheCpuSayingWhy() throws IOException {
        MemorySegment good = jpeg(40, 30, TurboJpeg.TJSAMP_420, 0, 1);
        MemorySegment large = jpeg(120, 100, TurboJpeg.TJSAMP_420, 0, 2);
        MemorySegment garbage = arena.allocateFrom(JAVA_BYTE, new byte[] {(byte) 0xFF, (byte) 0xD8, 1, 2, 3, 4});
        List<MemorySegment> files = List.of(png(8, 8), cmykJpeg(16, 16), garbage, large, good);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 8, 10_000)) {
            long images = dbl.nvjpegStat("nvjpeg_images"); // after the colour check's, at opening
            GpuJpegDecoder.Decoded d = dec.decode(files, stream);
            assertFalse(d.onGpu(0));
            assertTrue(d.cpuReason(0).contains("cannot read it as a JPEG"), d.cpuReason(0));
            assertTrue(d.cpuReason(0).contains("NVJPEG_STATUS_BAD_JPEG"), d.cpuReason(0));
            assertFalse(d.onGpu(1));
            assertTrue(d.cpuReason(1).startsWith("4 components (CMYK or YCCK)"), d.cpuReason(1));
            assertFalse(d.onGpu(2));
            assertTrue(d.cpuReason(2).contains("cannot read it as a JPEG"), d.cpuReason(2));
            assertFalse(d.onGpu(3));
            assertEquals("120 x 100 pixels, over the GPU decode's limit of 10000", d.cpuReason(3));
            assertTrue(d.onGpu(4), d.cpuReason(4));
            assertArrayEquals(cpuDecode(good, 40, 30), gpuPixels(d, 4));
            assertThrows(IllegalStateException.class, () -> d.deviceAddress(0), "no pixels of a CPU file");
            assertEquals(images + 1, dbl.nvjpegStat("nvjpeg_images"), "each image decoded once, on one side");
        }
    }

    @Test
    void examineSaysWhatGoesToTheCpuBeforeSubmitQueuesTheRest() throws IOException {
        MemorySegment good = jpeg(40, 30, TurboJpeg.TJSAMP_420, 0, 1);
        List<MemorySegment> list = List.of(png(8, 8), good);
        GpuJpegDecoder.Files files = GpuJpegDecoder.Files.of(list);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 8, 1 << 20)) {
            assertThrows(IllegalStateException.class, () -> dec.submit(files, stream), "no examine before it");
            long images = dbl.nvjpegStat("nvjpeg_images"); // after the colour check's, at opening
            GpuJpegDecoder.Decoded d = dec.examine(files);
            assertFalse(d.onGpu(0));
            assertTrue(d.onGpu(1), d.cpuReason(1));
            assertEquals(images, dbl.nvjpegStat("nvjpeg_images"), "examine queues no decode");
            dec.submit(files, stream);
            assertArrayEquals(cpuDecode(good, 40, 30), gpuPixels(d, 1));
            assertEquals(images + 1, dbl.nvjpegStat("nvjpeg_images"), "the one file nvJPEG takes, decoded once");
            assertThrows(IllegalStateException.class, () -> dec.submit(files, stream), "one submit per examine");
        }
    }

    /**
     * nvJPEG writes planar YCbCr, and the colour step (native/cuda/ycc.cu, run from its own source on
     * the host) upsamples and converts it to TurboJPEG's default RGB byte for byte: every subsampling
     * nvJPEG names (4:1:1 on the hybrid decoder, which takes it), grayscale, progressive files, and
     * sizes whose chroma is 1 or 2 samples wide (replicated, not interpolated, as libjpeg-turbo does),
     * odd and tall. The double's planes are libjpeg's own raw samples, so a difference is the colour
     * step's, against the CPU decode as the reference.
     */
    @Test
    void planarYcbcrIsConvertedAsTheCpuDecodesEverySubsampling() {
        int[] subsamplings = {
            TurboJpeg.TJSAMP_444,
            TurboJpeg.TJSAMP_422,
            TurboJpeg.TJSAMP_420,
            TurboJpeg.TJSAMP_440,
            TurboJpeg.TJSAMP_411,
            TurboJpeg.TJSAMP_GRAY
        };
        int[][] sizes = {{1, 1}, {2, 5}, {3, 2}, {4, 4}, {5, 3}, {37, 23}, {23, 61}, {130, 97}};
        List<MemorySegment> files = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int ss : subsamplings) {
            for (int[] size : sizes) {
                for (int flags : new int[] {0, TurboJpeg.TJFLAG_PROGRESSIVE}) {
                    files.add(jpeg(size[0], size[1], ss, flags, files.size()));
                    names.add("subsampling " + ss + ", " + size[0] + " x " + size[1]
                            + (flags == 0 ? "" : ", progressive"));
                }
            }
        }
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, files.size(), 1 << 20)) {
            assertTrue(dec.convertsColour(), "nvJPEG writes planes; the colour step converts them");
            assertNull(dec.backendNote());
            GpuJpegDecoder.Decoded d = dec.decode(files, stream);
            for (int i = 0; i < files.size(); i++) {
                assertTrue(d.onGpu(i), names.get(i) + ": " + d.cpuReason(i));
                assertArrayEquals(cpuDecode(files.get(i), d.width(i), d.height(i)), gpuPixels(d, i), names.get(i));
            }
        }
    }

    /**
     * The planes are laid out from the subsampling (libjpeg's downsampled sizes, rows padded to 64
     * bytes and planes to 16 rows); a chroma size nvJPEG reports beyond that is refused before nvJPEG
     * is given a pointer, since nvJPEG writes the size it reports.
     */
    @Test
    void aChromaPlaneNvjpegReportsLargerThanItsLayoutIsRefused() {
        // 4:2:0, 375 x 500: 188 x 250 chroma, laid out 192 bytes a row, 256 rows.
        assertTrue(GpuJpegDecoder.Planes.holds(375, 500, Nvjpeg.NVJPEG_CSS_420, 188, 250));
        assertTrue(GpuJpegDecoder.Planes.holds(375, 500, Nvjpeg.NVJPEG_CSS_420, 192, 256), "the padding");
        assertFalse(GpuJpegDecoder.Planes.holds(375, 500, Nvjpeg.NVJPEG_CSS_420, 193, 250), "wider than a row");
        assertFalse(GpuJpegDecoder.Planes.holds(375, 500, Nvjpeg.NVJPEG_CSS_420, 188, 257), "taller than the plane");
        assertFalse(
                GpuJpegDecoder.Planes.holds(375, 500, Nvjpeg.NVJPEG_CSS_444, 385, 500), "4:4:4 past its 384-byte rows");
        assertTrue(GpuJpegDecoder.Planes.holds(375, 500, Nvjpeg.NVJPEG_CSS_444, 375, 500));
    }

    /**
     * Where nvJPEG refuses planar output, the decoder says so and takes nvJPEG's own RGB: the pixels
     * come all the same (the double's RGB is libjpeg's; a GPU's differs in its chroma).
     */
    @Test
    void whereNvjpegWritesNoPlanesItsOwnRgbIsTakenAndSaid() {
        dbl.failCall("nvjpegDecodeBatchedInitialize", 1, Nvjpeg.NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED);
        MemorySegment file = jpeg(41, 29, TurboJpeg.TJSAMP_420, 0, 7);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 4, 1 << 20)) {
            assertFalse(dec.convertsColour());
            assertTrue(
                    dec.backendNote()
                            .startsWith("nvJPEG writes no planar YCbCr here (nvjpegDecodeBatchedInitialize: "
                                    + "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED): its own RGB"),
                    dec.backendNote());
            GpuJpegDecoder.Decoded d = dec.decode(List.of(file), stream);
            assertTrue(d.onGpu(0), d.cpuReason(0));
            assertArrayEquals(cpuDecode(file, 41, 29), gpuPixels(d, 0));
            assertEquals(
                    deviceAllocsBefore + 1, dbl.stat("live_device_allocs"), "the pixels alone: no planes, no jobs");
        }
    }

    /**
     * Opening decodes one check image through the planes and the colour step and compares it with
     * TurboJPEG's: where that fails (here nvJPEG's call, failed by the double), the decoder says why
     * and takes nvJPEG's own RGB, and decodes.
     */
    @Test
    void aColourCheckThatFailsAtOpeningIsSaidAndNvjpegsRgbTaken() {
        dbl.failCall("nvjpegDecodeBatched", 1, Nvjpeg.NVJPEG_STATUS_EXECUTION_FAILED);
        MemorySegment file = jpeg(41, 29, TurboJpeg.TJSAMP_422, 0, 8);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 4, 1 << 20)) {
            assertFalse(dec.convertsColour());
            assertEquals(
                    "nvJPEG's planar YCbCr failed Stoke's check at opening (nvjpegDecodeBatched failed: "
                            + "NVJPEG_STATUS_EXECUTION_FAILED (6)): its own RGB, whose chroma is replicated, not"
                            + " interpolated as the CPU's",
                    dec.backendNote());
            GpuJpegDecoder.Decoded d = dec.decode(List.of(file), stream);
            assertTrue(d.onGpu(0), d.cpuReason(0));
            assertArrayEquals(cpuDecode(file, 41, 29), gpuPixels(d, 0));
        }
    }

    /**
     * A three-component JPEG is YCbCr or RGB as libjpeg decides it from its markers: JFIF means YCbCr,
     * else an Adobe marker's transform (0 RGB), else components named R, G, B. nvJPEG and the colour
     * step convert every such file as YCbCr, so an RGB-coded one goes to the CPU, with the reason.
     */
    @Test
    void aJpegCodedInRgbIsLeftToTheCpu() {
        MemorySegment jfif = jpeg(24, 16, TurboJpeg.TJSAMP_444, 0, 21); // TurboJPEG writes JFIF, IDs 1, 2, 3
        MemorySegment namedRgb = patched(jfif, false, -1, "RGB");
        MemorySegment adobeRgb = patched(jfif, true, 0, null);
        MemorySegment adobeYcc = patched(jfif, true, 1, null);
        MemorySegment bare = patched(jfif, false, -1, null); // no marker, IDs 1, 2, 3: YCbCr
        MemorySegment jfifNamedRgb = patched(jfif, false, -2, "RGB"); // JFIF kept: YCbCr whatever the IDs
        List<MemorySegment> files = List.of(namedRgb, adobeRgb, adobeYcc, bare, jfifNamedRgb);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 8, 1 << 20)) {
            GpuJpegDecoder.Decoded d = dec.decode(files, stream);
            for (int i : new int[] {0, 1}) {
                assertFalse(d.onGpu(i), "file " + i);
                assertTrue(d.cpuReason(i).startsWith("coded in RGB, not YCbCr"), d.cpuReason(i));
            }
            for (int i : new int[] {2, 3, 4}) {
                assertTrue(d.onGpu(i), "file " + i + ": " + d.cpuReason(i));
                assertArrayEquals(cpuDecode(files.get(i), 24, 16), gpuPixels(d, i), "file " + i);
            }
        }
    }

    /**
     * A copy of TurboJPEG's {@code jpeg} (its JFIF APP0 first): the APP0 made an Adobe APP14 with
     * {@code transform}, or its identifier spoilt ({@code transform} -1), or kept (-2); the three
     * components' IDs set to {@code ids}' letters where given.
     */
    MemorySegment patched(MemorySegment jpeg, boolean adobe, int transform, String ids) {
        MemorySegment m = arena.allocate(jpeg.byteSize());
        MemorySegment.copy(jpeg, 0, m, 0, jpeg.byteSize());
        assertEquals(0xE0, m.get(JAVA_BYTE, 3) & 0xFF, "TurboJPEG's APP0 first");
        if (adobe) {
            m.set(JAVA_BYTE, 3, (byte) 0xEE);
            for (int i = 0; i < 5; i++) {
                m.set(JAVA_BYTE, 6 + i, (byte) "Adobe".charAt(i));
            }
            m.set(JAVA_BYTE, 17, (byte) transform);
        } else if (transform == -1) {
            m.set(JAVA_BYTE, 6, (byte) 'X'); // no longer "JFIF"
        }
        long p = 2;
        while ((m.get(JAVA_BYTE, p + 1) & 0xFF) != 0xC0) {
            p += 2 + ((m.get(JAVA_BYTE, p + 2) & 0xFF) << 8 | (m.get(JAVA_BYTE, p + 3) & 0xFF));
        }
        assertEquals(3, m.get(JAVA_BYTE, p + 9));
        long sof = p;
        while ((m.get(JAVA_BYTE, p + 1) & 0xFF) != 0xDA) {
            p += 2 + ((m.get(JAVA_BYTE, p + 2) & 0xFF) << 8 | (m.get(JAVA_BYTE, p + 3) & 0xFF));
        }
        assertEquals(3, m.get(JAVA_BYTE, p + 4), "one scan of the three components");
        if (ids != null) {
            for (int c = 0; c < 3; c++) {
                m.set(JAVA_BYTE, sof + 10 + 3L * c, (byte) ids.charAt(c)); // the frame's IDs
                m.set(JAVA_BYTE, p + 5 + 2L * c, (byte) ids.charAt(c)); // and the scan's selectors
            }
        }
        return m;
    }

    @Test
    void theHardwareEngineLeavesWhatItDoesNotDecodeToTheCpu() {
        dbl.nvjpegHardware(true);
        MemorySegment baseline = jpeg(48, 32, TurboJpeg.TJSAMP_420, 0, 3);
        MemorySegment progressive = jpeg(48, 32, TurboJpeg.TJSAMP_420, TurboJpeg.TJFLAG_PROGRESSIVE, 4);
        MemorySegment s411 = jpeg(64, 32, TurboJpeg.TJSAMP_411, 0, 5);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, true, 4, 1 << 20)) {
            assertEquals(GpuJpegDecoder.Backend.HARDWARE, dec.backend());
            assertNull(dec.backendNote());
            long parses = dbl.nvjpegStat("header_parses"); // after the colour check's, at opening
            GpuJpegDecoder.Decoded d = dec.decode(List.of(progressive, baseline, s411), stream);
            assertFalse(d.onGpu(0));
            assertTrue(d.cpuReason(0).startsWith("nvJPEG's hardware decoder does not take it"), d.cpuReason(0));
            assertTrue(d.onGpu(1), d.cpuReason(1));
            assertArrayEquals(cpuDecode(baseline, 48, 32), gpuPixels(d, 1));
            assertFalse(d.onGpu(2));
            assertTrue(d.cpuReason(2).startsWith("nvJPEG's hardware decoder does not take it"), d.cpuReason(2));
            // The engine's support check reads each file's headers, not its entropy-coded data.
            assertEquals(parses + 3, dbl.nvjpegStat("header_parses"), "one header parse a file");
            assertEquals(0, dbl.nvjpegStat("whole_parses"), "no whole parse");
        }
    }

    /**
     * The decode stage's readers examine the files where they read them, each with an examiner of
     * its own on its own thread: their verdicts and sizes are the decoder's own examination's, and
     * examine() takes them as given (a verdict planted here reaches the result), reading no header.
     */
    @Test
    void examinersOnOtherThreadsSayWhatTheDecodersOwnExaminationSaysAndExamineTakesIt() throws Exception {
        dbl.nvjpegHardware(true);
        MemorySegment baseline = jpeg(48, 32, TurboJpeg.TJSAMP_420, 0, 3);
        MemorySegment gray = jpeg(17, 9, TurboJpeg.TJSAMP_GRAY, 0, 8);
        MemorySegment progressive = jpeg(48, 32, TurboJpeg.TJSAMP_420, TurboJpeg.TJFLAG_PROGRESSIVE, 4);
        MemorySegment large = jpeg(120, 100, TurboJpeg.TJSAMP_444, 0, 2);
        MemorySegment garbage = arena.allocateFrom(JAVA_BYTE, new byte[] {(byte) 0xFF, (byte) 0xD8, 1, 2, 3, 4});
        List<MemorySegment> list = List.of(baseline, png(8, 8), cmykJpeg(16, 16), gray, progressive, large, garbage);
        int n = list.size();
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, true, 8, 10_000)) {
            GpuJpegDecoder.Decoded own = dec.decode(GpuJpegDecoder.Files.of(list), stream); // its own examination
            String[] ownWhy = new String[n];
            int[] ownW = new int[n];
            int[] ownH = new int[n];
            for (int i = 0; i < n; i++) {
                ownWhy[i] = own.cpuReason(i);
                ownW[i] = own.onGpu(i) ? own.width(i) : 0;
                ownH[i] = own.onGpu(i) ? own.height(i) : 0;
            }
            String[] why = new String[n];
            int[] w = new int[n];
            int[] h = new int[n];
            int[] css = new int[n];
            GpuJpegDecoder.Examiner[] examiners = {dec.newExaminer(), dec.newExaminer()};
            Thread[] threads = new Thread[examiners.length];
            for (int t = 0; t < threads.length; t++) {
                int first = t;
                threads[t] = Thread.ofPlatform().start(() -> {
                    for (int i = first; i < n; i += threads.length) { // as the readers stripe a batch
                        MemorySegment f = list.get(i);
                        why[i] = examiners[first].examine(f.address(), f.byteSize());
                        w[i] = why[i] == null ? examiners[first].width() : 0;
                        h[i] = why[i] == null ? examiners[first].height() : 0;
                        css[i] = why[i] == null ? examiners[first].subsampling() : 0;
                    }
                });
            }
            for (Thread t : threads) {
                t.join();
            }
            assertArrayEquals(ownWhy, why);
            assertArrayEquals(ownW, w);
            assertArrayEquals(ownH, h);
            assertNull(why[0]);
            assertEquals(17, w[3]);
            assertTrue(why[4].startsWith("nvJPEG's hardware decoder does not take it"), why[4]);

            why[3] = "planted: the reader said so"; // the gray file, which nvJPEG takes
            GpuJpegDecoder.Files given = new GpuJpegDecoder.Files() {
                @Override
                public int count() {
                    return n;
                }

                @Override
                public long address(int i) {
                    return list.get(i).address();
                }

                @Override
                public long length(int i) {
                    return list.get(i).byteSize();
                }

                @Override
                public boolean examined() {
                    return true;
                }

                @Override
                public String why(int i) {
                    return why[i];
                }

                @Override
                public int width(int i) {
                    return w[i];
                }

                @Override
                public int height(int i) {
                    return h[i];
                }

                @Override
                public int subsampling(int i) {
                    return css[i];
                }
            };
            long imagesBefore = dbl.nvjpegStat("nvjpeg_images");
            GpuJpegDecoder.Decoded d = dec.decode(given, stream);
            assertEquals("planted: the reader said so", d.cpuReason(3), "the reader's verdict, as given");
            assertTrue(d.onGpu(0), d.cpuReason(0));
            assertArrayEquals(cpuDecode(baseline, 48, 32), gpuPixels(d, 0));
            for (int i = 1; i < n; i++) {
                assertFalse(d.onGpu(i), "file " + i);
            }
            assertEquals(imagesBefore + 1, dbl.nvjpegStat("nvjpeg_images"), "only what the verdicts gave nvJPEG");
        }
        // The examiners' streams were the decoder's to close: the leak check after each test counts them.
    }

    @Test
    void withoutTheEngineItSaysSoOnceAndTheHybridDecoderTakesProgressiveFiles() {
        MemorySegment progressive = jpeg(48, 32, TurboJpeg.TJSAMP_420, TurboJpeg.TJFLAG_PROGRESSIVE, 6);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, true, 4, 1 << 20)) {
            assertEquals(GpuJpegDecoder.Backend.GPU_HYBRID, dec.backend());
            assertEquals(
                    "nvJPEG's hardware decoder is not available on this device (nvjpegCreateEx: "
                            + "NVJPEG_STATUS_ARCH_MISMATCH): decoding with its GPU hybrid decoder",
                    dec.backendNote());
            GpuJpegDecoder.Decoded d = dec.decode(List.of(progressive), stream);
            assertTrue(d.onGpu(0), d.cpuReason(0));
            assertArrayEquals(cpuDecode(progressive, 48, 32), gpuPixels(d, 0));
        }
    }

    @Test
    void aBatchNvjpegRefusesGoesWholeToTheCpuAndTheNextBatchDecodes() {
        List<MemorySegment> files = List.of(jpeg(20, 20, TurboJpeg.TJSAMP_444, 0, 7), jpeg(30, 20, 2, 0, 8));
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 4, 1 << 20)) {
            dbl.failCall("nvjpegDecodeBatched", 1, Nvjpeg.NVJPEG_STATUS_BAD_JPEG);
            GpuJpegDecoder.Decoded d = dec.decode(files, stream);
            for (int i = 0; i < 2; i++) {
                assertFalse(d.onGpu(i));
                assertEquals(
                        "nvJPEG refused the batch it was in (nvjpegDecodeBatched: NVJPEG_STATUS_BAD_JPEG)",
                        d.cpuReason(i));
            }
            d = dec.decode(files, stream);
            assertTrue(d.onGpu(0) && d.onGpu(1));
            assertArrayEquals(cpuDecode(files.get(1), 30, 20), gpuPixels(d, 1));
        }
    }

    /** {@code n} JPEGs of assorted sizes and subsamplings, from {@code seed}; file i's size depends on i alone. */
    List<MemorySegment> assorted(int n, long seed) {
        int[] samplings = {TurboJpeg.TJSAMP_420, TurboJpeg.TJSAMP_444, TurboJpeg.TJSAMP_422, TurboJpeg.TJSAMP_GRAY};
        List<MemorySegment> files = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            files.add(jpeg(17 + 5 * (i % 7), 11 + 3 * (i % 5), samplings[i % samplings.length], 0, seed + i));
        }
        return files;
    }

    void assertDecodedAsTheCpuDoes(GpuJpegDecoder.Decoded d, List<MemorySegment> files, String what) {
        assertEquals(files.size(), d.size());
        for (int i = 0; i < files.size(); i++) {
            assertTrue(d.onGpu(i), what + ", file " + i + ": " + d.cpuReason(i));
            assertArrayEquals(
                    cpuDecode(files.get(i), d.width(i), d.height(i)), gpuPixels(d, i), what + ", pixels of file " + i);
        }
    }

    /**
     * In parts, a batch is decoded as one call decodes it: every image at its place with its pixels,
     * one batched call per part (each on a state of its own: the double fails a state in two calls at
     * once), a smaller batch in fewer parts, and the decoder's threads, streams and events gone once
     * it is closed.
     */
    @Test
    void aBatchInPartsIsDecodedAsOneCallDecodesIt() {
        int n = 3 * GpuJpegDecoder.MIN_PART_IMAGES + 5;
        List<MemorySegment> files = assorted(n, 100);
        long streams = dbl.stat("live_streams");
        long events = dbl.stat("live_events");
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(context, nvjpeg, false, n, 1 << 20, 3)) {
            assertEquals(3, dec.parts());
            long calls = dbl.nvjpegStat("nvjpeg_batches"); // after the colour check's, at opening
            for (int round = 0; round < 3; round++) {
                assertDecodedAsTheCpuDoes(dec.decode(files, stream), files, "round " + round);
            }
            assertEquals(calls + 9, dbl.nvjpegStat("nvjpeg_batches"), "three parts a batch");
            List<MemorySegment> two = files.subList(0, 3 * GpuJpegDecoder.MIN_PART_IMAGES - 1);
            assertDecodedAsTheCpuDoes(dec.decode(two, stream), two, "a batch for two parts");
            assertEquals(calls + 11, dbl.nvjpegStat("nvjpeg_batches"), "a batch of under 48 in two parts");
            List<MemorySegment> one = files.subList(0, 5);
            assertDecodedAsTheCpuDoes(dec.decode(one, stream), one, "a batch for one part");
            assertEquals(calls + 12, dbl.nvjpegStat("nvjpeg_batches"), "a batch of under 32 in one part");
            assertDecodedAsTheCpuDoes(dec.decode(files, stream), files, "whole again");
        }
        assertEquals(streams, dbl.stat("live_streams"), "the parts' streams destroyed");
        assertEquals(events, dbl.stat("live_events"), "the parts' events destroyed");
    }

    /**
     * A part on another thread writes the decoder's pixels on its own stream: not before the work the
     * caller's stream queued before the batch has run. A copy of the last batch's image, queued on
     * the caller's stream and slowed down, still reads that batch's pixels while the next batch
     * decodes into the same place.
     */
    @Test
    void aPartWritesNoPixelBeforeTheCallersStreamHasRunWhatItHadQueued() {
        int n = 2 * GpuJpegDecoder.MIN_PART_IMAGES;
        List<MemorySegment> a = assorted(n, 200);
        List<MemorySegment> b = assorted(n, 300); // the same sizes, so the same places, other pixels
        int last = n - 1; // in the second part, the helper's
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(context, nvjpeg, false, n, 1 << 20, 2)) {
            GpuJpegDecoder.Decoded d = dec.decode(a, stream);
            int w = d.width(last);
            int h = d.height(last);
            byte[] expected = cpuDecode(a.get(last), w, h);
            try (DeviceBuffer copy = DeviceBuffer.allocate(driver, 3L * w * h)) {
                dbl.copyDelayMicros(50_000);
                driver.check(
                        driver.cuMemcpyDtoDAsync_v2(copy.pointer(), d.deviceAddress(last), 3L * w * h, stream.handle()),
                        "cuMemcpyDtoDAsync_v2");
                dec.decode(b, stream);
                dbl.copyDelayMicros(0);
                stream.synchronize();
                MemorySegment host = arena.allocate(3L * w * h);
                copy.copyToHost(host, 0);
                assertArrayEquals(expected, host.toArray(JAVA_BYTE), "the copy queued before the next batch");
            }
            assertDecodedAsTheCpuDoes(d, b, "the next batch");
        }
    }

    /**
     * A part nvJPEG refuses goes to the CPU, its images said so, and the other part is decoded; both
     * refused, every image goes. The engine refuses a part with a progressive file in it, which the
     * readers here said it takes (as an examiner that erred would). A device failure in either part is
     * thrown once both have ended, and the decoder closes cleanly.
     */
    @Test
    void aPartNvjpegRefusesGoesToTheCpuAndTheOtherIsDecoded() {
        dbl.nvjpegHardware(true);
        int n = 2 * GpuJpegDecoder.MIN_PART_IMAGES;
        int half = n / 2;
        for (List<Integer> progressive : List.of(List.of(20), List.of(3), List.of(3, 20))) {
            List<MemorySegment> files = new ArrayList<>();
            int[] widths = new int[n];
            int[] heights = new int[n];
            for (int i = 0; i < n; i++) {
                widths[i] = 17 + 5 * (i % 7);
                heights[i] = 11 + 3 * (i % 5);
                int flags = progressive.contains(i) ? TurboJpeg.TJFLAG_PROGRESSIVE : 0;
                files.add(jpeg(widths[i], heights[i], TurboJpeg.TJSAMP_420, flags, 500 + i));
            }
            GpuJpegDecoder.Files allTaken = new GpuJpegDecoder.Files() {
                @Override
                public int count() {
                    return n;
                }

                @Override
                public long address(int i) {
                    return files.get(i).address();
                }

                @Override
                public long length(int i) {
                    return files.get(i).byteSize();
                }

                @Override
                public boolean examined() {
                    return true;
                }

                @Override
                public String why(int i) {
                    return null;
                }

                @Override
                public int width(int i) {
                    return widths[i];
                }

                @Override
                public int height(int i) {
                    return heights[i];
                }

                @Override
                public int subsampling(int i) {
                    return Nvjpeg.NVJPEG_CSS_420;
                }
            };
            try (GpuJpegDecoder dec = GpuJpegDecoder.open(context, nvjpeg, true, n, 1 << 20, 2)) {
                GpuJpegDecoder.Decoded d = dec.decode(allTaken, stream);
                for (int i = 0; i < n; i++) {
                    int part = i < half ? 0 : 1;
                    boolean refused = progressive.stream().anyMatch(at -> (at < half ? 0 : 1) == part);
                    String what = "progressive at " + progressive + ", file " + i;
                    if (refused) {
                        assertFalse(d.onGpu(i), what);
                        assertEquals(
                                "nvJPEG refused the batch it was in (nvjpegDecodeBatched: NVJPEG_STATUS_JPEG_NOT_SUPPORTED)",
                                d.cpuReason(i),
                                what);
                    } else {
                        assertTrue(d.onGpu(i), what + ": " + d.cpuReason(i));
                        assertArrayEquals(cpuDecode(files.get(i), widths[i], heights[i]), gpuPixels(d, i), what);
                    }
                }
            }
        }
        List<MemorySegment> files = assorted(n, 400);
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(context, nvjpeg, false, n, 1 << 20, 2)) {
            assertDecodedAsTheCpuDoes(dec.decode(files, stream), files, "before the failure");
            dbl.failCall("nvjpegDecodeBatched", 2, Nvjpeg.NVJPEG_STATUS_EXECUTION_FAILED);
            NvjpegException e = assertThrows(NvjpegException.class, () -> dec.decode(files, stream));
            assertEquals("nvjpegDecodeBatched failed: NVJPEG_STATUS_EXECUTION_FAILED (6)", e.getMessage());
            assertDecodedAsTheCpuDoes(dec.decode(files, stream), files, "after the failure");
        }
    }

    @Test
    void aDeviceFailureIsAnErrorNamingTheCallNotAFileSentToTheCpu() {
        List<MemorySegment> files = List.of(jpeg(20, 20, TurboJpeg.TJSAMP_444, 0, 9));
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 4, 1 << 20)) {
            dbl.failCall("nvjpegDecodeBatched", 1, Nvjpeg.NVJPEG_STATUS_EXECUTION_FAILED);
            NvjpegException e = assertThrows(NvjpegException.class, () -> dec.decode(files, stream));
            assertEquals("nvjpegDecodeBatched failed: NVJPEG_STATUS_EXECUTION_FAILED (6)", e.getMessage());
        }
    }

    @Test
    void batchesThatGrowGetMoreDeviceMemoryAndThePixelsOfTheLastOneStayRight() {
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 8, 1 << 20)) {
            for (int round = 0; round < 4; round++) {
                List<MemorySegment> files = new ArrayList<>();
                int side = 16 << round;
                for (int i = 0; i <= round; i++) {
                    files.add(jpeg(side + i, side, TurboJpeg.TJSAMP_420, 0, 100 * round + i));
                }
                GpuJpegDecoder.Decoded d = dec.decode(files, stream);
                for (int i = 0; i <= round; i++) {
                    assertArrayEquals(cpuDecode(files.get(i), side + i, side), gpuPixels(d, i), round + "/" + i);
                }
            }
            // The pixels, nvJPEG's planes and the colour step's jobs: one buffer of each at a time.
            assertEquals(deviceAllocsBefore + 3, dbl.stat("live_device_allocs"), "one buffer of each at a time");
        }
    }

    /**
     * A decoder closed while its last batch is still queued (the caller left on an exception, say)
     * waits for it before freeing the memory nvJPEG writes: the batch's work here sits behind 50 ms of
     * simulated compute on the same stream.
     */
    @Test
    void closingRightAfterADecodeWaitsForItsWorkBeforeFreeingItsMemory() {
        try (DeviceKernels kernels = new DeviceKernels(driver)) {
            GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 2, 1 << 20);
            kernels.spin(50_000_000L, stream);
            GpuJpegDecoder.Decoded d = dec.decode(List.of(jpeg(200, 150, TurboJpeg.TJSAMP_420, 0, 11)), stream);
            assertTrue(d.onGpu(0));
            assertEquals(1, dbl.nvjpegStat("nvjpeg_pending"), "queued behind the spin");
            dec.close();
            assertEquals(0, dbl.nvjpegStat("nvjpeg_pending"), "done before its memory was freed");
        }
    }

    @Test
    void aBatchsPixelsAreGoneOnceTheDecoderMovesOnOrCloses() {
        GpuJpegDecoder.Decoded d;
        try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, false, 2, 1 << 20)) {
            d = dec.decode(List.of(jpeg(20, 20, TurboJpeg.TJSAMP_444, 0, 10)), stream);
            assertTrue(d.onGpu(0));
            stream.synchronize();
            assertThrows(
                    IllegalArgumentException.class,
                    () -> dec.decode(List.of(jpeg(8, 8, 0, 0, 1), jpeg(8, 8, 0, 0, 2), jpeg(8, 8, 0, 0, 3)), stream),
                    "more files than the decoder was opened for");
            assertThrows(
                    IllegalArgumentException.class,
                    () -> dec.decode(List.of(MemorySegment.ofArray(new byte[16])), stream),
                    "a heap segment has no address nvJPEG can read");
        }
        assertThrows(IndexOutOfBoundsException.class, () -> d.onGpu(0), "a closed decoder's batch is empty");
    }
}
