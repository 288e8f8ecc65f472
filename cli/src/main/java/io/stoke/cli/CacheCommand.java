package io.stoke.cli;

import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.transform.RestartCopy;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code stoke cache DATA --cache-dir DIR}: fills a restart cache with every file's copy at once,
 * on every core, for a job that wants the copies before its first epoch rather than as its
 * loader's idle time allows.
 */
@Command(
        name = "cache",
        mixinStandardHelpOptions = true,
        description = {
            "Fills --cache-dir with a lossless restart-marker copy of every JPEG of an ImageFolder or list",
            "file (the same pixels; the training crop then decodes only its part of each), on every core.",
            "A loader given --cache-dir (cache_dir= in Python) makes the same copies itself, from the CPU its",
            "decoding leaves; this is for a job that wants them all before its first epoch."
        })
public final class CacheCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "DATA", description = "ImageFolder directory or list file.")
    Path data;

    @Option(names = "--cache-dir", required = true, paramLabel = "DIR", description = "The cache's folder.")
    Path cacheDir;

    @Option(
            names = "--cache-size",
            paramLabel = "BYTES",
            description = "The most bytes the folder holds (default: ${DEFAULT-VALUE}).")
    String cacheSize = "64G";

    @Option(
            names = "--workers",
            paramLabel = "N",
            description = "Threads that copy (default: the number of cores, ${DEFAULT-VALUE} here).")
    int workers = Runtime.getRuntime().availableProcessors();

    @Override
    public Integer call() {
        PrintStream err = System.err;
        long budget;
        try {
            budget = ByteSize.parse(cacheSize);
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
        try (Dataset dataset = LoaderOptions.openFailing(data)) {
            if (!(dataset instanceof FileDataset files)) {
                err.println("stoke cache: " + data + " is shards: the cache is for a folder or list of files"
                        + " (stoke pack --keep-pixels makes seekable shards)");
                return Main.EXIT_USAGE;
            }
            try (RestartCache cache = RestartCache.open(cacheDir, budget, m -> err.println("stoke cache: " + m))) {
                ProgressBar progress = ProgressBar.terminalOnly(err, files.size());
                long[] last = {0};
                long start = System.nanoTime();
                cache.fill(files, workers, done -> {
                    synchronized (last) {
                        progress.advance(done - last[0]);
                        last[0] = done;
                    }
                });
                progress.finish();
                double seconds = (System.nanoTime() - start) / 1e9;
                RestartCache.Stats s = cache.stats();
                System.out.printf(
                        Locale.ROOT,
                        "stoke cache %s -> %s: %d copied, %d to be read as they are (they seek already, or cannot"
                                + " be copied), %d there already or not JPEGs; %.1f MB in the cache; %.1f s (%.0f"
                                + " files/s)%s%n",
                        data,
                        cacheDir,
                        s.copied(),
                        s.originals(),
                        files.size() - s.copied() - s.originals(),
                        s.usedBytes() / 1e6,
                        seconds,
                        files.size() / seconds,
                        s.full() ? "; FULL: the rest is read from the originals" : "");
                return 0;
            }
        }
    }
}
