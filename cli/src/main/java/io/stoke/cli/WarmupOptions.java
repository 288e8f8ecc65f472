package io.stoke.cli;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * How demo and bench prepare before timing: the page cache always (unless a cold read is asked
 * for), the JIT only when asked: with Stoke's C library a fresh process runs near its warm rate.
 */
public final class WarmupOptions {
    @Option(
            names = "--no-warmup",
            description = {
                "Time a cold read as well: skip reading every file once before "
                        + "timing (page cache), and any --warmup-images pass."
            })
    boolean noWarmup;

    @Option(
            names = "--warmup-images",
            paramLabel = "N",
            description = {
                "Images decoded untimed in the same process before the timed run, so that it "
                        + "meets JIT-compiled code (default: ${DEFAULT-VALUE}: a fresh process, timed as a user starts it)."
            })
    int warmupImages;

    @Option(
            names = "--json",
            paramLabel = "FILE",
            description = "Also write the figures and every batch's wait as JSON.")
    Path json;
}
