package io.stoke.cli;

import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.serve.ByteSize;
import io.stoke.serve.LoaderSetup;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code stoke cache DATA --restart-cache-dir DIR}: fills a restart cache with every JPEG's copy at once,
 * on every core, for a job that wants the copies before its first epoch rather than as its
 * loader's idle time allows.
 */
@Command(
        name = "cache",
        mixinStandardHelpOptions = true,
        description = {
            "Fills the restart cache --restart-cache-dir with a lossless restart-marker copy of every JPEG of a "
                    + "dataset (an ImageFolder, a list file, tar shards or Parquet, local or remote) (the same pixels; the "
                    + "training crop then decodes only its part of each), on every core. "
                    + "A loader given --restart-cache-dir (restart_cache_dir= in Python) makes the same copies itself, from "
                    + "the CPU its decoding leaves; this is for a job that wants them all before its first epoch."
        })
public final class CacheCommand implements Callable<Integer> {
    @Parameters(
            index = "0",
            paramLabel = "DATA",
            description = "ImageFolder directory, list file, tar shards or Parquet, local or remote.")
    Path data;

    @Option(names = "--restart-cache-dir", paramLabel = "DIR", description = "The restart cache's folder (required).")
    Path cacheDir;

    @Option(
            names = "--restart-cache-size",
            paramLabel = "BYTES",
            description = "The most bytes the folder holds (default: ${DEFAULT-VALUE}).")
    String cacheSize = "64G";

    @Option(names = "--cache-dir", paramLabel = "DIR", hidden = true)
    void deprecatedCacheDir(Path dir) {
        DeprecatedSpelling.say(System.err, "stoke cache", "--cache-dir", "--restart-cache-dir");
        cacheDir = dir;
    }

    @Option(names = "--cache-size", paramLabel = "BYTES", hidden = true)
    void deprecatedCacheSize(String size) {
        DeprecatedSpelling.say(System.err, "stoke cache", "--cache-size", "--restart-cache-size");
        cacheSize = size;
    }

    @Option(
            names = "--cache-shared-with",
            paramLabel = "GROUP",
            description = {
                "Share --restart-cache-dir with the members of GROUP on purpose: a folder made here is GROUP's (mode "
                        + "2770) and its entries 0640, and another member's folder is used where it is GROUP's and no one "
                        + "else can write it. Without it the folder is yours alone (0700, entries 0600), and a folder "
                        + "another user owns, or others can write, is refused (docs/security.md)."
            })
    String cacheSharedWith;

    @Mixin
    ColumnOptions columnOptions = new ColumnOptions();

    @Option(
            names = "--shard-cache-size",
            paramLabel = "SIZE",
            description = "Remote shards and Parquet: bytes of shards or row groups the shard cache holds at once;"
                    + " at least twice the largest (default: ${DEFAULT-VALUE}).")
    String shardCache = "4G";

    @Option(names = "--shard-cache", paramLabel = "SIZE", hidden = true)
    void deprecatedShardCache(String size) {
        DeprecatedSpelling.say(System.err, "stoke cache", "--shard-cache", "--shard-cache-size");
        shardCache = size;
    }

    @Option(
            names = "--workers",
            paramLabel = "N",
            description = "Threads that copy (default: the number of cores, ${DEFAULT-VALUE} here).")
    int workers = Runtime.getRuntime().availableProcessors();

    @Override
    public Integer call() {
        PrintStream err = System.err;
        long budget;
        UrlDatasetProvider.ShardCache shards;
        TableColumns columns;
        String spec;
        FolderAccess access;
        try {
            if (cacheDir == null) {
                throw new IllegalArgumentException("--restart-cache-dir DIR is required: the restart cache to fill");
            }
            budget = ByteSize.parse(cacheSize);
            access = LoaderSetup.folderAccess(cacheSharedWith);
            shards = new UrlDatasetProvider.ShardCache(ByteSize.parse(shardCache), null);
            columns = columnOptions.columns();
            spec = columnOptions.dataSpec(data.toString());
            if (workers < 1) {
                throw new IllegalArgumentException("--workers must be positive, not " + workers);
            }
        } catch (IllegalArgumentException e) {
            err.println("stoke cache: " + e.getMessage());
            return Main.EXIT_USAGE;
        }
        if (!RestartCopy.available()) {
            err.println("stoke cache: no copies can be made here: " + RestartCopy.unavailableReason());
            return Main.EXIT_FAILED;
        }
        // The same columns as the loader's: a Parquet member's entry is named by the column it is read from.
        try (Dataset dataset = Datasets.checked(
                Datasets.openLocalOrUrl(spec, shards, columns),
                spec,
                ErrorPolicy.FAIL,
                w -> err.println("stoke: " + w))) {
            try (RestartCache restartCache =
                    RestartCache.open(cacheDir, budget, access, m -> err.println("stoke cache: " + m))) {
                ProgressBar progress = ProgressBar.terminalOnly(err, dataset.size());
                long[] last = {0};
                long start = System.nanoTime();
                restartCache.fill(dataset, workers, done -> {
                    synchronized (last) {
                        progress.advance(done - last[0]);
                        last[0] = done;
                    }
                });
                progress.finish();
                double seconds = (System.nanoTime() - start) / 1e9;
                RestartCache.Stats s = restartCache.stats();
                System.out.printf(
                        Locale.ROOT,
                        "stoke cache %s -> %s: %d copied, %d to be read as they are (they seek already, or cannot"
                                + " be copied), %d there already or not JPEGs; %.1f MB in the restart cache; %.1f s (%.0f"
                                + " files/s)%s%n",
                        data,
                        cacheDir,
                        s.copied(),
                        s.originals(),
                        dataset.size() - s.copied() - s.originals(),
                        s.usedBytes() / 1e6,
                        seconds,
                        dataset.size() / seconds,
                        s.full() ? "; FULL: the rest is read from the originals" : "");
                return 0;
            }
        }
    }
}
