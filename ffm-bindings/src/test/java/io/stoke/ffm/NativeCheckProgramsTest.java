package io.stoke.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.testing.LibFuzzerRun;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The C library's paths that a Java test on one CPU cannot reach, each against its rule by a
 * program in {@code native/pixels}, built with the compiler that built the library and run.
 */
class NativeCheckProgramsTest {
    @TempDir
    Path tmp;

    /**
     * Every form of the resize's two passes against the plain loops, on this CPU:
     * {@code check_passes.c}. A CPU with AVX-512 VNNI never runs the AVX2 gathers or the
     * one-pixel-at-a-time loop past 16 taps in production (and one without it never runs {@code
     * horizontal_block16} or {@code horizontal_vnni}), so the Java comparisons of {@code
     * ResamplerTest} and {@code TrainTransformTest} reach only the paths of the CPU they run on;
     * this program runs both horizontal paths, and the vertical pass's AVX-512 form against its
     * plain loop where the CPU has AVX-512, with each source ending against a page that faults on
     * reading.
     */
    @Test
    void everyPathGivesThePlainLoopsBytesAndReadsNothingPastItsTaps() throws Exception {
        builtOrSaid(StokePixels.available(), StokePixels.unavailableReason(), "the resize passes' paths");
        String out = buildAndRun("check_passes", "-lm");
        assertTrue(out.contains("; 0 differ"), out);
    }

    /**
     * The affine transform's vector rows (bilinear with AVX2's four lanes and AVX-512's eight) and
     * its row copies for whole-pixel shifts, against the plain per-pixel loops, with each source
     * ending against a page that faults on reading: {@code check_geometry.c}. AffineOpsTest compares
     * the library with Pillow through this CPU's widest path only.
     */
    @Test
    void theAffineTransformsVectorRowsGiveThePlainLoopsBytes() throws Exception {
        builtOrSaid(StokePixels.available(), StokePixels.unavailableReason(), "the affine transform's paths");
        String out = buildAndRun("check_geometry", "-lm");
        assertTrue(out.contains("; 0 differ"), out);
    }

    /**
     * The restart copy's check that every coefficient fits the standard Huffman tables, in its SSE2
     * and AVX2 forms, against the rule, with values planted at each edge of the ranges:
     * {@code check_baseline.c}. A photograph never reaches the block-by-block branch, and a test
     * through the copier reaches only this CPU's form.
     */
    @Test
    void theCopysRangeCheckAnswersAsItsRule() throws Exception {
        builtOrSaid(StokeJpeg.available(), StokeJpeg.unavailableReason(), "the restart copy's range check");
        String out = buildAndRun("check_baseline", "-ljpeg");
        assertTrue(out.contains("; 0 differ"), out);
    }

    /**
     * ColorJitter's hue in its vector form (AVX2, eight pixels at a time) against its plain loop,
     * over every RGB colour at ten shifts, into another buffer and in place, and over short runs that
     * end against a page that faults on reading: {@code check_hue.c}. ColorJitterTest compares the
     * library with torchvision through this CPU's path only, on 360,000 colours.
     */
    @Test
    void theHuesVectorFormGivesThePlainLoopsBytes() throws Exception {
        builtOrSaid(StokeAugment.available(), StokeAugment.unavailableReason(), "the hue's vector form");
        String out = buildAndRun("check_hue", "-lm");
        assertTrue(out.contains("; 0 differ"), out);
    }

    /**
     * torchvision's grid sample (AugMix's Rotate, Shear and Translate on tensors) in the library's
     * forms (an x86-64-v3 clone whose fused multiply-adds and roundings are single instructions, and
     * bilinear rows sixteen pixels at a time with AVX-512) against a build of its plain loop alone,
     * over 4,000 random images, matrices and fills with each source ending against a page that
     * faults on reading: {@code check_tensor_affine.c}. TensorOpsTest and AugMixStageTest compare
     * the library with torchvision through this CPU's widest path only.
     */
    @Test
    void theGridSamplesFormsGiveThePlainLoopsBytes() throws Exception {
        builtOrSaid(StokeAugment.available(), StokeAugment.unavailableReason(), "the grid sample's forms");
        Path source = LibFuzzerRun.nativeDir().resolve("pixels").resolve("stoke_tensor.c");
        Path plain = tmp.resolve("plain.so");
        Path library = tmp.resolve("library.so");
        String cc = System.getenv().getOrDefault("CC", "gcc");
        // As native/pixels/build.sh builds the library, and once with neither the clones nor the rows.
        List<String> flags = List.of("-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared");
        List<String> plainCommand = new ArrayList<>(List.of(cc));
        plainCommand.addAll(flags);
        plainCommand.addAll(
                List.of("-DAFFINE_CLONES=", "-DAFFINE_LANES=0", "-o", plain.toString(), source.toString(), "-lm"));
        run(new ProcessBuilder(plainCommand), "building the plain grid sample");
        List<String> libraryCommand = new ArrayList<>(List.of(cc));
        libraryCommand.addAll(flags);
        libraryCommand.addAll(List.of("-o", library.toString(), source.toString(), "-lm"));
        run(new ProcessBuilder(libraryCommand), "building the grid sample as the library has it");
        String out = buildAndRun("check_tensor_affine", List.of(plain.toString(), library.toString()), "-ldl", "-lm");
        assertTrue(out.contains("; 0 differ"), out);
    }

    /**
     * Goes on where the library under test is built; otherwise says on stderr what is not checked and
     * why, and skips the test (the build says once why the library is missing).
     */
    private static void builtOrSaid(boolean built, String why, String what) {
        if (!built) {
            System.err.println("[stoke] NOT CHECKED: " + what + ": " + why);
        }
        Assumptions.assumeTrue(built, what + ": the library is not built here (" + why + ")");
    }

    /** Builds {@code native/pixels/NAME.c} with the library's compiler and runs it; its output. */
    private String buildAndRun(String name, String... libraries) throws Exception {
        return buildAndRun(name, List.of(), libraries);
    }

    /** {@link #buildAndRun(String, String...)}, the program given {@code arguments}. */
    private String buildAndRun(String name, List<String> arguments, String... libraries) throws Exception {
        Path pixels = LibFuzzerRun.nativeDir().resolve("pixels");
        Path exe = tmp.resolve(name);
        List<String> command = new ArrayList<>(List.of(
                System.getenv().getOrDefault("CC", "gcc"),
                "-std=c11",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-I",
                pixels.toString(),
                "-o",
                exe.toString(),
                pixels.resolve(name + ".c").toString()));
        command.addAll(List.of(libraries));
        String built = run(new ProcessBuilder(command), "building " + name + ".c");
        List<String> program = new ArrayList<>(List.of(exe.toString()));
        program.addAll(arguments);
        String out = run(new ProcessBuilder(program), name);
        System.err.println("[stoke] " + (built + out).strip());
        return out;
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
