package io.stoke.ffm.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * One short libFuzzer run of a target in {@code native/fuzz}, for the tests that keep each target
 * building and catch what a few seconds of mutation find: build it with its script (clang, ASan,
 * UBSan; a script's exit 3 means clang or compiler-rt is missing, and the test skips saying so),
 * write the seeds, run for a set time, and fail on any finding, with the fuzzer's log.
 */
public final class LibFuzzerRun {
    private LibFuzzerRun() {}

    /** The repository's {@code native/} folder, found above the working directory. */
    public static Path nativeDir() {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("native/fuzz/build.sh"))) {
                return d.resolve("native");
            }
        }
        throw new IllegalStateException(
                "native/fuzz/build.sh not found above " + Path.of("").toAbsolutePath());
    }

    /**
     * Builds {@code target} with {@code native/fuzz/<script>} under {@code work}, runs it for
     * {@code seconds} over {@code seeds} and the {@code extraCorpora} (replayed folders such as
     * regressions), and fails the test on a finding or a hang. The run is seeded
     * ({@code -Dstoke.fuzz.seed=N} to choose the seed, else a fresh one), and its seed is printed
     * and named in every failure, so that a finding can be run again the same way.
     *
     * @param what how the skip and the figures name the target (e.g. "the region decoder")
     * @return the fuzzer's {@code stat::number_of_executed_units} line
     */
    public static String run(
            String what,
            String script,
            String target,
            Path work,
            int seconds,
            List<byte[]> seeds,
            List<Path> extraCorpora)
            throws IOException, InterruptedException {
        Path out = work.resolve("fuzz");
        Process build = new ProcessBuilder(
                        "sh", nativeDir().resolve("fuzz").resolve(script).toString(), out.toString())
                .redirectErrorStream(true)
                .start();
        String buildLog = new String(build.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(build.waitFor(300, TimeUnit.SECONDS), "the fuzz target's build hung");
        if (build.exitValue() == 3) {
            System.err.println("[stoke] SKIPPING " + what + "'s fuzz run: " + buildLog.strip());
        }
        Assumptions.assumeTrue(build.exitValue() != 3, buildLog);
        assertEquals(0, build.exitValue(), buildLog);

        Path corpus = Files.createDirectories(work.resolve("corpus"));
        for (int i = 0; i < seeds.size(); i++) {
            Files.write(corpus.resolve("seed-" + i), seeds.get(i));
        }
        long seed =
                Long.getLong("stoke.fuzz.seed", 1 + ThreadLocalRandom.current().nextLong(Integer.MAX_VALUE - 1));
        String again = what + "'s fuzz run, seed " + seed + " (again: -Dstoke.fuzz.seed=" + seed + ")";
        System.err.println("[stoke] " + again);
        Path log = work.resolve("fuzz.log");
        Path artifacts = Files.createDirectories(work.resolve("artifacts"));
        List<String> command = new ArrayList<>(List.of(
                out.resolve(target).toString(),
                "-max_total_time=" + seconds,
                "-seed=" + seed,
                "-rss_limit_mb=2048",
                "-print_final_stats=1",
                "-artifact_prefix=" + artifacts + "/",
                corpus.toString()));
        extraCorpora.forEach(p -> command.add(p.toString()));
        Process fuzz = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        boolean ended = fuzz.waitFor(seconds + 120L, TimeUnit.SECONDS);
        if (!ended) {
            fuzz.destroyForcibly();
        }
        String text = Files.readString(log, StandardCharsets.UTF_8);
        assertTrue(ended, again + ": the fuzzer did not stop:\n" + text);
        assertEquals(
                0,
                fuzz.exitValue(),
                again + ": the fuzzer found something (its input is in " + artifacts + "):\n" + text);
        String stats = text.lines()
                .filter(l -> l.startsWith("stat::number_of_executed_units"))
                .findFirst()
                .orElse("");
        assertFalse(stats.isEmpty(), text);
        System.err.println("[stoke] " + what + " fuzz run, seed " + seed + ", " + seconds + " s, " + seeds.size()
                + " seed inputs: " + stats);
        return stats;
    }
}
