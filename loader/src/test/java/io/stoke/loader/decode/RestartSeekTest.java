package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokeJpeg;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.testing.RegionCalls;
import io.stoke.loader.testing.RegionCalls.Region;
import io.stoke.loader.testing.RestartJpegs;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The region decoder's seeking to restart markers (native/pixels/stoke_jpeg.c), called directly:
 * every region it decodes from the segments that hold it is, byte for byte, the sequential region
 * decode of the same request (which {@code RegionRowsTest} holds to TurboJPEG's whole decode), and
 * its inner pixels are TurboJPEG's whole decode's; on 4:2:0, 4:2:2, 4:4:4 and gray files with
 * intervals of part of a row, one row and several rows, at full and reduced DCT scales, for boxes
 * at every edge. Files whose markers lie are decoded sequentially and say why.
 */
class RestartSeekTest {
    @BeforeEach
    void needsTheRegionDecoder() {
        Assumptions.assumeTrue(StokeJpeg.available(), () -> {
            System.err.println("[stoke] SKIPPING restart seek check: " + StokeJpeg.unavailableReason());
            return StokeJpeg.unavailableReason();
        });
    }

    private static Region decode(byte[] jpeg, int num, int x, int y, int w, int h, int flags) {
        return RegionCalls.decode(jpeg, num, 8, x, y, w, h, flags);
    }

    /** TurboJPEG's decode of the whole image at num/8, as RGBX rows; size gets its width and height. */
    private static byte[] whole(byte[] jpeg, int num, int[] size) {
        try (Arena arena = Arena.ofConfined();
                io.stoke.ffm.JpegDecompressor tj = new io.stoke.ffm.JpegDecompressor()) {
            MemorySegment in = arena.allocate(jpeg.length);
            MemorySegment.copy(jpeg, 0, in, JAVA_BYTE, 0, jpeg.length);
            assertEquals(0, tj.readHeader(in, jpeg.length), tj::errorMessage);
            int w = TurboJpeg.scaled(tj.width(), num, 8);
            int h = TurboJpeg.scaled(tj.height(), num, 8);
            MemorySegment out = arena.allocate((long) w * h * 4);
            assertEquals(0, tj.decompress(in, jpeg.length, out, w, w * 4, h, TurboJpeg.TJPF_RGBX, 0), tj::errorMessage);
            size[0] = w;
            size[1] = h;
            return out.toArray(JAVA_BYTE);
        }
    }

    /** Boxes at every edge and corner, thin ones, one pixel, the whole image, and random ones. */
    private static List<int[]> boxes(int sw, int sh, long seed) {
        List<int[]> boxes = new ArrayList<>();
        int bw = Math.max(1, sw / 3);
        int bh = Math.max(1, sh / 3);
        for (int[] corner : new int[][] {{0, 0}, {sw - bw, 0}, {0, sh - bh}, {sw - bw, sh - bh}}) {
            boxes.add(new int[] {corner[0], corner[1], bw, bh});
        }
        boxes.add(new int[] {0, sh / 2, sw, Math.max(1, sh / 5)}); // a band across
        boxes.add(new int[] {sw / 2, 0, Math.max(1, sw / 5), sh}); // a band down
        boxes.add(new int[] {sw / 2, sh / 2, 1, 1});
        boxes.add(new int[] {sw - 1, sh - 1, 1, 1});
        boxes.add(new int[] {0, 0, sw, sh});
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < 8; i++) {
            int w = 1 + r.nextInt(sw);
            int h = 1 + r.nextInt(sh);
            boxes.add(new int[] {r.nextInt(sw - w + 1), r.nextInt(sh - h + 1), w, h});
        }
        return boxes;
    }

    private static int mcuColumns(int w, int subsamp) {
        int mcu = subsamp == StokeJpeg.SAMP_444 || subsamp == StokeJpeg.SAMP_GRAY ? 8 : 16;
        return (w + mcu - 1) / mcu;
    }

    @ParameterizedTest(name = "{0}x{1}, subsampling {2}, interval {3}")
    @CsvSource({
        // interval: > 0 MCUs; -N: N MCU rows
        "203, 157, 2, -1", // 4:2:0, one MCU row, odd sizes (partial MCUs right and below)
        "203, 157, 2, 1", // every MCU
        "203, 157, 2, 13", // 13 MCUs: a whole row (203 px = 13 MCUs of 16)
        "256, 341, 2, 4", // a quarter of a row, as stoke pack writes
        "341, 256, 2, 11", // part of a row that divides it (22 MCUs)
        "341, 256, 2, 5", // 5 MCUs: segments that cross rows
        "203, 157, 2, -3", // several rows
        "240, 181, 1, -1", // 4:2:2
        "240, 181, 1, 3", // 4:2:2, part of a row (15 MCUs)
        "200, 150, 0, -1", // 4:4:4
        "200, 150, 0, 5", // 4:4:4, part of a row (25 MCUs)
        "200, 150, 0, -2",
        "131, 77, 3, -1", // gray
        "131, 77, 3, 17", // gray, one row of 17 blocks
        "131, 77, 3, 7" // gray, crossing rows
    })
    void everySeekedRegionIsTheSequentialDecodeByteForByte(int w, int h, int subsamp, int interval) {
        int mcus = interval > 0 ? interval : -interval * mcuColumns(w, subsamp);
        byte[] jpeg = RestartJpegs.encode(TestImages.rgb(w, h, 17L * w + h), w, h, subsamp, 90, mcus);
        int seeked = 0;
        for (int num : new int[] {8, 4, 3, 2, 1}) {
            int[] size = new int[2];
            byte[] reference = whole(jpeg, num, size);
            int sw = size[0];
            int sh = size[1];
            for (int[] b : boxes(sw, sh, 31L * num + mcus)) {
                String what = sw + "x" + sh + " at " + num + "/8, box " + Arrays.toString(b);
                Region seek = decode(jpeg, num, b[0], b[1], b[2], b[3], 0);
                Region sequential = decode(jpeg, num, b[0], b[1], b[2], b[3], StokeJpeg.NO_SEEK);
                assertEquals(StokeJpeg.OK, seek.status(), () -> what + ": " + seek.message());
                assertEquals(StokeJpeg.OK, sequential.status(), () -> what + ": " + sequential.message());
                assertNotEquals(StokeJpeg.PATH_FELL_BACK, seek.path(), () -> what + ": " + seek.message());
                assertEquals(StokeJpeg.PATH_SEQUENTIAL, sequential.path(), what);
                assertEquals(sequential.x(), seek.x(), what);
                assertEquals(sequential.width(), seek.width(), what);
                if (!Arrays.equals(sequential.rgbx(), seek.rgbx())) {
                    fail(what + ": the seeked region differs from the sequential one");
                }
                seeked += seek.path() == StokeJpeg.PATH_SEEKED ? 1 : 0;
                // Away from the cut edges (which Stoke's caller covers with a margin), the whole decode's pixels.
                for (int row = b[1] + (b[1] > 0 ? 1 : 0); row < b[1] + b[3]; row++) {
                    int x0 = b[0] + (b[0] > 0 ? 2 : 0);
                    int x1 = b[0] + b[2] - (b[0] + b[2] < sw ? 2 : 0);
                    if (x1 <= x0) {
                        continue;
                    }
                    int from = (row * sw + x0) * 4;
                    int at = ((row - b[1]) * seek.width() + x0 - seek.x()) * 4;
                    if (!Arrays.equals(reference, from, from + (x1 - x0) * 4, seek.rgbx(), at, at + (x1 - x0) * 4)) {
                        fail(what + ": row " + row + " differs from TurboJPEG's whole decode");
                    }
                }
            }
        }
        // Every box but the whole image (and those that need every segment) was seeked.
        assertTrue(seeked >= 40, "only " + seeked + " regions were decoded from their segments");
    }

    /** {@code cjpeg} (libjpeg-turbo-progs), when it is on the PATH: another encoder's restart markers. */
    private static Path cjpeg() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "cjpeg");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    @ParameterizedTest(name = "cjpeg {0}")
    @CsvSource({
        "-restart 1", // one MCU row, 4:2:0
        "-restart 3B -sample 2x1", // 3 MCUs, 4:2:2
        "-restart 2 -sample 1x2", // two rows, 4:4:0
        "-restart 5B -sample 4x1", // 4:1:1, segments across rows
        "-restart 1 -sample 1x1 -optimize", // 4:4:4, optimised Huffman tables
        "-restart 7B -grayscale"
    })
    void anotherEncodersMarkersAreSeekedToo(String options, @TempDir Path tmp) throws Exception {
        Path cjpeg = cjpeg();
        if (cjpeg == null) {
            System.err.println("[stoke] SKIPPING cjpeg's restart markers: no cjpeg on PATH (apt-get install"
                    + " libjpeg-turbo-progs)");
        }
        Assumptions.assumeTrue(cjpeg != null, "no cjpeg on PATH");
        int w = 333;
        int h = 250;
        Path ppm = tmp.resolve("in.ppm");
        byte[] header = ("P6\n" + w + " " + h + "\n255\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] rgb = TestImages.rgb(w, h, 3);
        byte[] file = Arrays.copyOf(header, header.length + rgb.length);
        System.arraycopy(rgb, 0, file, header.length, rgb.length);
        Files.write(ppm, file);
        Path out = tmp.resolve("out.jpg");
        List<String> cmd = new ArrayList<>(List.of(cjpeg.toString()));
        cmd.addAll(List.of(options.split(" ")));
        cmd.addAll(List.of("-outfile", out.toString(), ppm.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), log);
        byte[] jpeg = Files.readAllBytes(out);
        assertTrue(RestartJpegs.markers(jpeg).length > 5, "cjpeg wrote no restart markers");
        int seeked = 0;
        for (int num : new int[] {8, 4, 1}) {
            int[] size = new int[2];
            whole(jpeg, num, size);
            for (int[] b : boxes(size[0], size[1], num)) {
                Region seek = decode(jpeg, num, b[0], b[1], b[2], b[3], 0);
                Region sequential = decode(jpeg, num, b[0], b[1], b[2], b[3], StokeJpeg.NO_SEEK);
                String what = options + " at " + num + "/8, box " + Arrays.toString(b);
                assertEquals(StokeJpeg.OK, seek.status(), () -> what + ": " + seek.message());
                assertNotEquals(StokeJpeg.PATH_FELL_BACK, seek.path(), () -> what + ": " + seek.message());
                assertEquals(sequential.x(), seek.x(), what);
                assertArrayEquals(sequential.rgbx(), seek.rgbx(), what);
                seeked += seek.path() == StokeJpeg.PATH_SEEKED ? 1 : 0;
            }
        }
        assertTrue(seeked >= 20, "only " + seeked + " regions were decoded from their segments");
    }

    /** A pack-sized file: 16 MCU rows of 22 MCUs, a marker every 2 MCUs. */
    private static byte[] packed() {
        return RestartJpegs.encode(TestImages.rgb(341, 256, 5), 341, 256, StokeJpeg.SAMP_420, 90, 2);
    }

    /** A hostile copy must decode as the sequential decode does, and say why it did not seek. */
    private static void fallsBack(byte[] hostile, String expected) {
        for (int[] b : new int[][] {{100, 120, 80, 60}, {0, 0, 40, 40}, {300, 200, 41, 56}}) {
            Region seek = decode(hostile, 8, b[0], b[1], b[2], b[3], 0);
            Region sequential = decode(hostile, 8, b[0], b[1], b[2], b[3], StokeJpeg.NO_SEEK);
            assertEquals(sequential.status(), seek.status(), seek.message());
            assertArrayEquals(sequential.rgbx(), seek.rgbx(), "box " + Arrays.toString(b));
            assertEquals(StokeJpeg.PATH_FELL_BACK, seek.path(), "box " + Arrays.toString(b) + ": " + seek.message());
            if (seek.status() == StokeJpeg.OK) {
                assertTrue(seek.message().contains(expected), seek.message());
            }
        }
    }

    @Test
    void aMissingMarkerIsNotTrusted() {
        byte[] jpeg = packed();
        int at = RestartJpegs.markers(jpeg)[40];
        byte[] hostile = new byte[jpeg.length - 2];
        System.arraycopy(jpeg, 0, hostile, 0, at);
        System.arraycopy(jpeg, at + 2, hostile, at, jpeg.length - at - 2);
        fallsBack(hostile, "RST");
    }

    @Test
    void markersOutOfOrderAreNotTrusted() {
        byte[] jpeg = packed();
        int[] markers = RestartJpegs.markers(jpeg);
        byte[] hostile = jpeg.clone();
        byte swap = hostile[markers[30] + 1];
        hostile[markers[30] + 1] = hostile[markers[31] + 1];
        hostile[markers[31] + 1] = swap;
        fallsBack(hostile, "was due");
    }

    @Test
    void aDriThatLiesIsNotTrusted() {
        byte[] jpeg = packed();
        int field = RestartJpegs.intervalField(jpeg);
        byte[] more = jpeg.clone();
        more[field + 1] = 1; // claims a marker every MCU: too few markers for it
        fallsBack(more, "gives");
        byte[] fewer = jpeg.clone();
        fewer[field + 1] = 4; // claims every 4 MCUs: more markers than it allows
        fallsBack(fewer, "more restart markers");
    }

    @Test
    void aMarkerInTheWrongPlaceIsNotTrusted() {
        byte[] jpeg = packed();
        int[] markers = RestartJpegs.markers(jpeg);
        // Each segment keeps its bytes, but a marker moves 3 bytes earlier: two segments with the
        // wrong number of MCUs' data, a count and an order that are right.
        int fellBack = 0;
        for (int k : new int[] {0, 20, markers.length - 1}) {
            byte[] hostile = jpeg.clone();
            int at = markers[k];
            byte[] marker = {hostile[at], hostile[at + 1]};
            System.arraycopy(jpeg, at - 3, hostile, at - 1, 3);
            hostile[at - 3] = marker[0];
            hostile[at - 2] = marker[1];
            for (int[] b : new int[][] {{0, 0, 341, 200}, {0, 0, 60, 20}, {200, 100, 100, 100}}) {
                Region seek = decode(hostile, 8, b[0], b[1], b[2], b[3], 0);
                if (seek.path() == StokeJpeg.PATH_SEEKED) {
                    // Only segments the move did not touch (damage outside the box goes unseen, as
                    // in the sequential region decode): their pixels are the undamaged file's.
                    Region intact = decode(jpeg, 8, b[0], b[1], b[2], b[3], StokeJpeg.NO_SEEK);
                    assertEquals(StokeJpeg.OK, seek.status(), seek.message());
                    assertArrayEquals(intact.rgbx(), seek.rgbx(), "marker " + k + ", box " + Arrays.toString(b));
                } else {
                    Region sequential = decode(hostile, 8, b[0], b[1], b[2], b[3], StokeJpeg.NO_SEEK);
                    assertEquals(StokeJpeg.PATH_FELL_BACK, seek.path());
                    assertEquals(sequential.status(), seek.status(), seek.message());
                    assertArrayEquals(sequential.rgbx(), seek.rgbx());
                    fellBack++;
                }
            }
        }
        assertTrue(fellBack >= 3, "the moved markers' segments were decoded " + fellBack + " times sequentially");
    }

    @Test
    void anotherMarkerInsideTheScanOrACutFileIsNotTrusted() {
        byte[] jpeg = packed();
        int at = RestartJpegs.markers(jpeg)[10];
        byte[] hostile = jpeg.clone();
        hostile[at + 1] = (byte) 0xFE; // a COM marker where RST2 was
        fallsBack(hostile, "inside the scan");
        fallsBack(Arrays.copyOf(jpeg, jpeg.length - 2), "without an EOI");
    }

    @Test
    void theDecoderReportsHowItDecodedAndSeekingCanBeTurnedOff() {
        byte[] jpeg = packed();
        CropBox box = new CropBox();
        box.set(120, 90, 150, 120, false);
        try (Arena arena = Arena.ofConfined();
                JpegDecoder seeking = new JpegDecoder(TransformSpec.defaults());
                JpegDecoder sequential = new JpegDecoder(TransformSpec.defaults())) {
            MemorySegment in = arena.allocate(jpeg.length);
            MemorySegment.copy(jpeg, 0, in, JAVA_BYTE, 0, jpeg.length);
            sequential.seekRestartMarkers(false);
            for (JpegDecoder d : new JpegDecoder[] {seeking, sequential}) {
                assertEquals(SampleStatus.OK, d.readHeader(in, jpeg.length), d::message);
                assertEquals(SampleStatus.OK, d.decodeBox(in, jpeg.length, box, 112), d::message);
            }
            assertEquals(StokeJpeg.PATH_SEEKED, seeking.regionPath());
            assertEquals(StokeJpeg.PATH_SEQUENTIAL, sequential.regionPath());
            assertEquals(sequential.decoded().width(), seeking.decoded().width());
            assertEquals(sequential.decoded().x(), seeking.decoded().x());
            long bytes = (long) seeking.decoded().width() * seeking.decoded().height() * 4;
            assertEquals(
                    -1L,
                    seeking.decoded()
                            .pixels()
                            .asSlice(0, bytes)
                            .mismatch(sequential.decoded().pixels().asSlice(0, bytes)));
        }
    }

    @Test
    void theEncoderWritesTurboJpegsBytesWithoutMarkersAndTheSamePixelsWithThem() {
        for (int subsamp :
                new int[] {StokeJpeg.SAMP_420, StokeJpeg.SAMP_422, StokeJpeg.SAMP_444, StokeJpeg.SAMP_GRAY}) {
            for (int quality : new int[] {75, 90, 97}) {
                byte[] rgb = TestImages.rgb(173, 99, subsamp * 7L + quality);
                byte[] turbo = TestImages.jpeg(rgb, 173, 99, 3, quality, subsamp, 0);
                byte[] plain = RestartJpegs.encode(rgb, 173, 99, subsamp, quality, 0);
                assertArrayEquals(turbo, plain, "subsampling " + subsamp + ", quality " + quality);
                byte[] marked = RestartJpegs.encode(rgb, 173, 99, subsamp, quality, 3);
                assertTrue(RestartJpegs.markers(marked).length > 10);
                int[] size = new int[2];
                assertArrayEquals(whole(turbo, 8, size), whole(marked, 8, size));
            }
        }
    }
}
