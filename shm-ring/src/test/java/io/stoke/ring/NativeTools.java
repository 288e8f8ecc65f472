package io.stoke.ring;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Finds gcc and the native/ folder for tests; skips loudly when gcc is missing. */
final class NativeTools {
    private NativeTools() {}

    static Path nativeDir() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("native/stoke_ring.h"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException(
                    "native/stoke_ring.h not found above " + Path.of("").toAbsolutePath());
        }
        return dir.resolve("native");
    }

    static void requireGcc() {
        boolean ok;
        try {
            ok = new ProcessBuilder("gcc", "--version")
                            .redirectErrorStream(true)
                            .start()
                            .waitFor()
                    == 0;
        } catch (IOException | InterruptedException e) {
            ok = false;
        }
        if (!ok) {
            System.err.println("\n*** SKIPPING C-consumer test: gcc is not installed (./stoke test installs it) ***\n");
        }
        assumeTrue(ok, "gcc is not installed: C consumer tests skipped");
    }

    /** Compiles {@code source} into {@code out}, failing the test with gcc's messages. */
    static Path compile(Path source, Path out) throws Exception {
        Process p = new ProcessBuilder(
                        "gcc",
                        "-O2",
                        "-Wall",
                        "-Werror",
                        "-I",
                        nativeDir().toString(),
                        "-o",
                        out.toString(),
                        source.toString())
                .redirectErrorStream(true)
                .start();
        String msg = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new AssertionError("gcc failed on " + source + ":\n" + msg);
        }
        return out;
    }

    record Result(int exit, String out) {}

    static Result run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " did not finish");
        }
        return new Result(p.exitValue(), out);
    }
}
