package io.stoke.cli;

import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Dataset;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code stoke bench DATA}: the loader over the user's own dataset, with the same figures as demo. */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = {
            "Decodes your dataset with Stoke and prints images/s, MB/s, time to first batch and the "
                    + "consumer's wait per batch. DATA is any dataset Stoke reads: an ImageFolder tree"
                    + " (DATA/<class>/<image>.jpg), a list file with one '<path> <label>' per line (paths relative to"
                    + " the list file's folder), shards, Parquet, Arrow or a lakehouse table (below)."
        })
public final class BenchCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "DATA", description = LoaderOptions.DATA)
    String data;

    @Mixin
    LoaderOptions options;

    @Mixin
    DeviceOptions device;

    @Mixin
    WarmupOptions warmup;

    @Override
    public Integer call() {
        try (Dataset dataset = options.open(data)) {
            System.err.printf("dataset: %d images in %s%n", dataset.size(), Urls.redact(data));
            return new BenchRun(System.out, System.err)
                    .execute(options, device, warmup, dataset, "stoke bench " + Urls.redact(data));
        }
    }
}
