package io.stoke.serve;

import io.stoke.loader.Loader;
import io.stoke.loader.cache.RestartCacheEpochs;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;

/**
 * The restart-cache log ({@code stoke serve --restart-cache-log}): what the restart cache did in
 * each epoch, said once as the epoch's last batch is published, as one line on standard error and,
 * given a file, one JSON object per line appended to it (what {@code
 * stoke.DataLoader.restart_cache_stats()} reads). This class is the one definition of the file
 * (docs/shared-memory.md, "The restart-cache log"). Called from one thread, the server's loop.
 */
public final class RestartCacheLogFile {
    /**
     * One epoch, one line of the file: this epoch's counts ({@link RestartCacheEpochs.Epoch}), then
     * the run's totals in this process, and the folder's bytes of its budget.
     */
    public record Epoch(
            long epoch,
            long hits,
            long misses,
            long copied,
            long copiedByWorkers,
            long originals,
            long damaged,
            long filledBytes,
            long totalHits,
            long totalMisses,
            long totalCopied,
            long totalCopiedByWorkers,
            long totalOriginals,
            long totalDamaged,
            long totalFilledBytes,
            long usedBytes,
            long budgetBytes,
            boolean full,
            String failure) {
        /** {@code e} as the file holds it. */
        public static Epoch of(RestartCacheEpochs.Epoch e) {
            return new Epoch(
                    e.epoch(),
                    e.hits(),
                    e.misses(),
                    e.copied(),
                    e.copiedByWorkers(),
                    e.originals(),
                    e.damaged(),
                    e.filledBytes(),
                    e.total().hits(),
                    e.total().misses(),
                    e.total().copied(),
                    e.total().copiedByWorkers(),
                    e.total().originals(),
                    e.total().damaged(),
                    e.total().filledBytes(),
                    e.total().usedBytes(),
                    e.total().budgetBytes(),
                    e.total().full(),
                    e.total().failure());
        }
    }

    private final List<RestartCacheEpochs.Epoch> epochs;
    private final JsonLinesLog<RestartCacheEpochs.Epoch, Epoch> lines;

    /**
     * A log of {@code loader}'s restart-cache epochs.
     *
     * @param file where to append them (null: standard error only)
     * @param prefix what each line on standard error starts with ({@code "stoke serve: "})
     */
    public RestartCacheLogFile(Loader loader, Path file, String prefix) {
        this(loader.restartCacheEpochs(), file, prefix);
    }

    /**
     * A log of the epochs in {@code epochs}, a view its producer adds to ({@link
     * Loader#restartCacheEpochs}, or the GPU decode stage's).
     */
    public RestartCacheLogFile(List<RestartCacheEpochs.Epoch> epochs, Path file, String prefix) {
        this.epochs = epochs;
        this.lines = new JsonLinesLog<>(file, prefix, RestartCacheEpochs.Epoch::sentence, Epoch::of);
    }

    /** Says the epochs ended since the last call. */
    public void report(PrintWriter err) {
        lines.report(epochs, err); // a view the publisher adds to
    }

    /** One epoch as its line of the file (no newline). */
    public static String line(Epoch e) {
        return JsonLinesLog.line(e);
    }

    /** The epochs in {@code file}; a line that is not one is one sentence naming the file. */
    public static List<Epoch> read(Path file) throws IOException {
        return JsonLinesLog.read(file, Epoch.class, "a restart-cache epoch");
    }
}
