package io.stoke.cli;

import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.testdata.DemoSample;
import io.stoke.testdata.SyntheticImageNet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code stoke demo}: the main job, on the built-in ImageNet-like sample. */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = {
            "Makes (once, deterministically, cached) 1,000 ImageNet-like JPEGs, then decodes them with "
                    + "Resize 256 + CenterCrop 224 to uint8 and prints images/s, MB/s, time to first batch and the "
                    + "consumer's wait per batch. Takes the same options as 'stoke bench'."
        })
public final class DemoCommand implements Callable<Integer> {
    @Mixin
    LoaderOptions options;

    @Mixin
    DeviceOptions device;

    @Mixin
    WarmupOptions warmup;

    @Override
    public Integer call() {
        System.err.println("built-in sample: " + DemoSample.directory());
        SyntheticImageNet.Summary sample = DemoSample.ensure();
        System.err.println(sample.format());
        Dataset dataset = ImageFolder.scan(DemoSample.directory());
        return new BenchRun(System.out, System.err)
                .execute(
                        options,
                        device,
                        warmup,
                        dataset,
                        "stoke demo (built-in ImageNet-like sample, " + dataset.size() + " images)");
    }
}
