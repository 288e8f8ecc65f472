package io.stoke.cli;

import picocli.CommandLine.Option;

/** How demo and bench prepare before timing: page cache and JIT, unless a cold start is asked for. */
public final class WarmupOptions {
    @Option(names = "--no-warmup", description = {"Time a cold start: skip reading every file once (page cache)",
            "and the untimed pass that lets the JIT compile the resize kernels."})
    boolean noWarmup;

    @Option(names = "--warmup-images", paramLabel = "N",
            description = "Images decoded untimed before the run, to warm the JIT (default: ${DEFAULT-VALUE}).")
    int warmupImages = 2048;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the figures and every batch's wait as JSON.")
    java.nio.file.Path json;
}
