package io.stoke.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.testing.LibFuzzerRun;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every form of the resize's two passes in C against the plain loops, on this CPU:
 * {@code native/pixels/check_passes.c}, built with the compiler that built the library and run. A
 * CPU with AVX-512 VNNI never runs the AVX2 gathers or the one-pixel-at-a-time loop past 16 taps in
 * production (and one without it never runs {@code horizontal_block16} or {@code horizontal_vnni}),
 * so the Java comparisons of {@code ResamplerTest} and {@code TrainTransformTest} reach only the
 * paths of the CPU they run on; this program runs both horizontal paths, and the vertical pass's
 * AVX-512 form against its plain loop where the CPU has AVX-512, with each source ending against
 * a page that faults on reading.
 */
class PixelsPassPathsTest {
    @TempDir
    Path tmp;

    @Test
    void everyPathGivesThePlainLoopsBytesAndReadsNothingPastItsTaps() throws Exception {
        if (!StokePixels.available()) {
            System.err.println("[stoke] NOT CHECKED: the resize passes' paths: " + StokePixels.unavailableReason());
        }
        Assumptions.assumeTrue(StokePixels.available(), "Stoke's C library is not built here");
        Path pixels = LibFuzzerRun.nativeDir().resolve("pixels");
        Path exe = tmp.resolve("check_passes");
        String cc = System.getenv().getOrDefault("CC", "gcc");
        String built = run(
                new ProcessBuilder(
                        cc,
                        "-std=c11",
                        "-O2",
                        "-Wall",
                        "-Wextra",
                        "-Werror",
                        "-I",
                        pixels.toString(),
                        "-o",
                        exe.toString(),
                        pixels.resolve("check_passes.c").toString(),
                        "-lm"),
                "building check_passes.c");
        String out = run(new ProcessBuilder(exe.toString()), "check_passes");
        assertTrue(out.contains("; 0 differ"), out);
        System.err.println("[stoke] " + (built + out).strip());
    }

    /** Runs a process to its end, failing the test on a hang or an exit status other than 0. */
    private static String run(ProcessBuilder command, String what) throws Exception {
        Process p = command.redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), what + " hung");
        // 139: SIGSEGV, a read past a source (each ends against a page that faults).
        assertEquals(0, p.exitValue(), what + " failed (exit " + p.exitValue() + "):\n" + out);
        return out;
    }
}
