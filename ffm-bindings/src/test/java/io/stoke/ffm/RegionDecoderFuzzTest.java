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
