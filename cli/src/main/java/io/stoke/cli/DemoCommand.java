package io.stoke.cli;

import io.stoke.loader.dataset.DemoSample;
import io.stoke.loader.dataset.SyntheticImageNet;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.SampleIndex;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code stoke demo}: the main job, on the built-in ImageNet-like sample. */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"Makes (once, deterministically, cached) 1,000 ImageNet-like JPEGs, then decodes them with",
                "Resize 256 + CenterCrop 224 to uint8 and prints images/s, MB/s, time to first batch and the",
                "consumer's wait per batch. Takes the same options as 'stoke bench'."})
public final class DemoCommand implements Callable<Integer> {
    @Mixin
    LoaderOptions options;

    @Option(names = "--no-warmup", description = {"Time a cold start: skip reading every file once (page cache)",
            "and the untimed pass that lets the JIT compile the resize kernels."})
    boolean noWarmup;

    @Option(names = "--warmup-images", paramLabel = "N",
            description = "Images decoded untimed before the run, to warm the JIT (default: ${DEFAULT-VALUE}).")
    int warmupImages = 768;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the figures and every batch's wait as JSON.")
    java.nio.file.Path json;

    @Override
    public Integer call() {
        try {
            return run();
        } catch (io.stoke.loader.gpu.DeviceUnavailableException e) {
            System.err.println("stoke: " + e.getMessage());
            return GpuCheckCommand.EXIT_NO_GPU;
        }
    }

    private int run() {
        System.err.println("built-in sample: " + DemoSample.directory());
        SyntheticImageNet.Summary sample = DemoSample.ensure();
        System.err.println(sample.format());
        SampleIndex index = ImageFolder.scan(DemoSample.directory());
        BenchRun run = new BenchRun(System.out, System.err);
        if (!noWarmup) {
            run.warmPageCache(index);
            run.warmJit(options.builder(index).epochs(0), warmupImages);
        }
        return run.run(options.builder(index), "stoke demo (built-in ImageNet-like sample, " + index.size() + " images)",
                options.epochs, json, options.device, options.deviceNormalize);
    }
}
