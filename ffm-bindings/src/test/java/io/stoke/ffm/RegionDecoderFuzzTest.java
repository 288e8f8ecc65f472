package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.testing.LibFuzzerRun;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short libFuzzer run (clang, AddressSanitizer, UndefinedBehaviorSanitizer) over the region
 * decoder, seeded with JPEGs of every kind the tests make and broken copies of them. The long run
 * is done by hand (native/fuzz/README.md); this one keeps the target building and catches what a
 * few seconds of mutation find.
 */
class RegionDecoderFuzzTest {
    private static final int SECONDS = 20;

    @TempDir
    Path tmp;

    private static Path nativeDir() {
        return LibFuzzerRun.nativeDir();
    }

    private static byte[] jpeg(int w, int h, int subsamp, int flags, boolean gray, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int channels = gray ? 1 : 3;
        byte[] px = new byte[w * h * channels];
        for (int i = 0; i < px.length; i++) {
            px[i] = (byte) ((i % (w * channels)) * 3 + (i / (w * channels)) * 2 + r.nextInt(32));
        }
        try (Arena arena = Arena.ofConfined();
                JpegCompressor c = new JpegCompressor()) {
            MemorySegment src = arena.allocate(px.length);
            MemorySegment.copy(px, 0, src, JAVA_BYTE, 0, px.length);
            MemorySegment dst = arena.allocate(JpegCompressor.maxSize(w, h, subsamp));
            long n = c.compress(
                    src, w, w * channels, h, gray ? TurboJpeg.TJPF_GRAY : TurboJpeg.TJPF_RGB, subsamp, 85, flags, dst);
            return dst.asSlice(0, n).toArray(JAVA_BYTE);
        }
    }

    /** An RGB image encoded by Stoke's encoder with a restart marker every {@code restartMcus} MCUs. */
    private static byte[] withMarkers(int w, int h, int subsamp, int restartMcus, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        byte[] px = new byte[w * h * 3];
        for (int i = 0; i < px.length; i++) {
            px[i] = (byte) ((i % (w * 3)) + (i / (w * 3)) * 2 + r.nextInt(32));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(px.length);
            MemorySegment.copy(px, 0, src, JAVA_BYTE, 0, px.length);
            long capacity = 4L * w * h + 4096;
            MemorySegment dst = arena.allocate(capacity);
            MemorySegment size = arena.allocate(8);
            MemorySegment message = arena.allocate(256);
            assertEquals(
                    StokeJpeg.OK,
                    StokeJpeg.encodeRgb(src, w, 3 * w, h, subsamp, 85, restartMcus, dst, capacity, size, message, 256),
                    () -> message.getString(0));
            return dst.asSlice(0, size.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0))
                    .toArray(JAVA_BYTE);
        }
    }

    /** {@code jpeg} with the byte after its {@code n}-th restart marker's 0xFF replaced. */
    private static byte[] remark(byte[] jpeg, int n, int code) {
        byte[] copy = jpeg.clone();
        for (int i = 0, seen = 0; i + 1 < copy.length; i++) {
            int next = copy[i + 1] & 0xFF;
            if ((copy[i] & 0xFF) == 0xFF && next >= 0xD0 && next <= 0xD7 && seen++ == n) {
                copy[i + 1] = (byte) code;
                break;
            }
        }
        return copy;
    }

    /** The fuzz target's input: 8 bytes of parameters (scale, region, scan limit), then the file. */
    private static byte[] input(byte[] params, byte[] file) {
        byte[] in = Arrays.copyOf(params, 8 + file.length);
        System.arraycopy(file, 0, in, 8, file.length);
        return in;
    }

    @Test
    void aShortFuzzRunFindsNothing() throws Exception {
        byte[][] files = {
            jpeg(64, 48, TurboJpeg.TJSAMP_420, 0, false, 1),
            jpeg(97, 33, TurboJpeg.TJSAMP_444, 0, false, 2),
            jpeg(120, 90, TurboJpeg.TJSAMP_422, 0, false, 3),
            jpeg(40, 70, TurboJpeg.TJSAMP_GRAY, 0, true, 4),
            jpeg(80, 60, TurboJpeg.TJSAMP_420, TurboJpeg.TJFLAG_PROGRESSIVE, false, 5)
        };
        byte[][] params = {{0, 0, 0, 0, 16, 0, 16, 62}, {7, 3, 5, 0, 40, 0, 20, 62}, {3, 1, 2, 0, 9, 0, 7, 1}};
        List<byte[]> seeds = new ArrayList<>();
        // Restart markers (every MCU, part of a row, rows), and markers that lie, for the seeking path;
        // written by Stoke's encoder, which is in the library the Maven build compiles with gcc.
        if (StokeJpeg.available()) {
            byte[] marked = withMarkers(120, 90, StokeJpeg.SAMP_420, 2, 6);
            byte[][] withMarkers = {
                marked,
                withMarkers(97, 70, StokeJpeg.SAMP_444, 1, 7),
                withMarkers(130, 64, StokeJpeg.SAMP_422, 9, 8),
                withMarkers(64, 80, StokeJpeg.SAMP_GRAY, 3, 9),
                remark(marked, 4, 0xD6),
                remark(marked, 7, 0xFE)
            };
            byte[][] seekParams = {
                {7, 40, 30, 0, 30, 0, 20, 62}, {7, 0, 50, 0, 60, 0, 30, 62}, {3, 10, 10, 0, 20, 0, 9, 62}
            };
            for (byte[] f : withMarkers) {
                for (byte[] p : seekParams) {
                    seeds.add(input(p, f));
                }
            }
        } else {
            System.err.println("[stoke] NOT SEEDED: files with restart markers (" + StokeJpeg.unavailableReason()
                    + "): of files with restart markers, the fuzzer starts from regressions/restart-* only");
        }
        for (byte[] f : files) {
            for (byte[] p : params) {
                seeds.add(input(p, f));
            }
            seeds.add(input(params[0], Arrays.copyOf(f, f.length / 2)));
        }
        LibFuzzerRun.run(
                "the region decoder",
                "build.sh",
                "fuzz_decode_region",
                tmp,
                SECONDS,
                seeds,
                List.of(nativeDir().resolve("fuzz/regressions")));
    }

    /** What the fuzzer found first: a header claiming a huge image made libjpeg allocate gigabytes. */
    @Test
    void aHeaderOverThePixelBudgetIsRefusedBeforeLibjpegAllocates() throws Exception {
        Assumptions.assumeTrue(StokeJpeg.available(), () -> {
            System.err.println("[stoke] SKIPPING region decoder check: " + StokeJpeg.unavailableReason());
            return StokeJpeg.unavailableReason();
        });
        byte[] input = Files.readAllBytes(nativeDir().resolve("fuzz/regressions/oom-header-claims-huge-image"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment jpeg = arena.allocate(input.length - 8);
            MemorySegment.copy(input, 8, jpeg, JAVA_BYTE, 0, input.length - 8);
            MemorySegment dst = arena.allocate(1 << 20);
            MemorySegment region = arena.allocate(4L * StokeJpeg.REGION_FIELDS);
            MemorySegment message = arena.allocate(256);
            int rc = StokeJpeg.decodeRegion(
                    jpeg,
                    input.length - 8,
                    1,
                    8,
                    0,
                    0,
                    16,
                    16,
                    36_000_000L,
                    500,
                    0,
                    dst,
                    dst.byteSize(),
                    region,
                    message,
                    256);
            assertEquals(StokeJpeg.ERROR, rc);
            assertTrue(message.getString(0).contains("pixel budget"), message.getString(0));
        }
    }
}
