package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.BadImages;
import io.stoke.testdata.DemoSample;
import io.stoke.testdata.SyntheticImageNet;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A dataset in which nothing decodes (nine broken JPEGs) must end every command within seconds,
 * exit code 1, every file named with its reason: with and without the untimed warm-up, under both
 * policies, and with no end of epochs. Before, the warm-up asked an endless loader for 2,048 good
 * images and caught every failure: it burnt both cores forever.
 */
class NothingDecodesTest {
    private static final Duration BOUND = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    private static void assertEveryFileNamed(String text) {
        for (var e : BadImages.EXPECTED.entrySet()) {
            assertTrue(
                    text.lines()
                            .anyMatch(l -> l.contains(e.getKey())
                                    && (l.startsWith("FAILED:") || l.startsWith("skipped:") || l.startsWith("  "))),
                    e.getKey() + " not named in\n" + text);
        }
    }

    @ParameterizedTest(name = "bench --on-error {0} {1}")
    @CsvSource({
        "fail,--warmup-images=2048",
        "skip,--warmup-images=2048",
        "fail,--no-warmup",
        "skip,--no-warmup",
        "fail,--epochs=0",
        "skip,--epochs=0"
    })
    void benchEndsAndNamesEveryFile(String policy, String extra) {
        Path data = BadImages.allBadFolder(tmp.resolve("bad"));
        String[] r = assertTimeoutPreemptively(
                BOUND,
                () -> BenchCommandTest.run(
                        "bench", data.toString(), "--on-error", policy, "--batch-size", "4", "--workers", "2", extra));
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[1] + r[2]);
        assertEveryFileNamed(r[1]);
        assertEquals(
                BadImages.EXPECTED.size(),
                r[1].lines()
                        .filter(l -> l.startsWith(policy.equals("fail") ? "FAILED:" : "skipped:"))
                        .count(),
                r[1]);
        assertTrue(r[1].contains("no file decoded: all 9 samples of epoch 0 failed"), r[1]);
    }

    @ParameterizedTest(name = "serve --on-error {0} --epochs {1}")
    @CsvSource({"fail,1", "skip,1", "fail,0", "skip,0"})
    void serveEndsNamesEveryFileAndRemovesItsRing(String policy, String epochs) throws Exception {
        Path data = BadImages.allBadFolder(tmp.resolve("bad"));
        Path ring = ShmTestSupport.shmPath("nothing-decodes");
        try (ShmTestSupport.Child serve = new ShmTestSupport.Child(ShmTestSupport.javaCommand(
                Main.class.getName(),
                "serve",
                data.toString(),
                "--ring",
                ring.toString(),
                "--on-error",
                policy,
                "--epochs",
                epochs,
                "--batch-size",
                "4",
                "--workers",
                "2"))) {
            assertTrue(
                    serve.process.waitFor(BOUND.toSeconds(), TimeUnit.SECONDS),
                    "serve still running:\n" + serve.output());
            assertEquals(Main.EXIT_FAILED, serve.process.exitValue(), serve.output());
            assertTrue(serve.output().contains("no sample decoded in epoch 0: all 9 samples failed"), serve.output());
            assertEveryFileNamed(serve.output());
            assertFalse(Files.exists(ring), "ring file left behind");
        } finally {
            Files.deleteIfExists(ring);
        }
    }

    /** The demo's own sample, cached and then broken on disk: demo must end and name the files too. */
    @Test
    void demoOnABrokenCachedSampleEndsAndNamesEveryFile() throws Exception {
        Path cache = tmp.resolve("cache");
        Path sample = cache.resolve("stoke").resolve(DemoSample.directory().getFileName());
        SyntheticImageNet.ensure(sample, DemoSample.options());
        List<Path> jpegs;
        try (Stream<Path> s = Files.walk(sample)) {
            jpegs = s.filter(p -> p.toString().endsWith(".jpg")).toList();
        }
        assertEquals(DemoSample.IMAGES, jpegs.size());
        for (Path p : jpegs) {
            // Same size, so the cache still looks complete and is not regenerated: bad bytes on disk.
            byte[] junk = new byte[(int) Files.size(p)];
            Arrays.fill(junk, (byte) 'x');
            Files.write(p, junk);
        }
        for (String warmup : new String[] {"--warmup-images=2048", "--no-warmup"}) {
            List<String> cmd =
                    new ArrayList<>(ShmTestSupport.javaCommand(Main.class.getName(), "demo", warmup, "--workers", "2"));
            Path log = tmp.resolve("demo.log");
            ProcessBuilder pb =
                    new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().put("XDG_CACHE_HOME", cache.toString());
            Process p = pb.start();
            boolean ended;
            try {
                ended = p.waitFor(BOUND.toSeconds(), TimeUnit.SECONDS);
            } finally {
                p.destroyForcibly();
                p.waitFor();
            }
            String output = Files.readString(log, StandardCharsets.UTF_8);
            assertTrue(ended, "demo still running after " + BOUND + ":\n" + output);
            assertEquals(Main.EXIT_FAILED, p.exitValue(), output);
            assertTrue(output.contains("no file decoded: all 1000 samples of epoch 0 failed"), output);
            assertEquals(
                    DemoSample.IMAGES,
                    output.lines()
                            .filter(l -> l.startsWith("FAILED:") && l.contains("not an image file"))
                            .count(),
                    output);
        }
    }
}
