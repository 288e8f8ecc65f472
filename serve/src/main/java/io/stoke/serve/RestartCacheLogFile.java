package io.stoke.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.stoke.loader.Loader;
import io.stoke.loader.cache.RestartCacheEpochs;
import io.stoke.ring.InheritedDescriptor;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The restart-cache log ({@code stoke serve --restart-cache-log}): what the restart cache did in
 * each epoch, said once as the epoch's last batch is published, as one line on standard error and,
 * given a file, one JSON object per line appended to it (what {@code
 * stoke.DataLoader.restart_cache_stats()} reads). This class is the one definition of the file
 * (docs/shared-memory.md, "The restart-cache log"). Called from one thread, the server's loop.
 */
public final class RestartCacheLogFile {
    private static final OpenOption[] NAMED = {
        StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS
    };
    private static final OpenOption[] INHERITED = {StandardOpenOption.APPEND, StandardOpenOption.WRITE};

    /**
     * One epoch, one line of the file: this epoch's counts ({@link RestartCacheEpochs.Epoch}), then
     * the run's totals in this process, and the folder's bytes of its budget.
     */
    public record Epoch(
            long epoch,
            long hits,
            long misses,
            long copied,
            long originals,
            long damaged,
            long filledBytes,
            long totalHits,
            long totalMisses,
            long totalCopied,
            long totalOriginals,
            long totalDamaged,
            long totalFilledBytes,
            long usedBytes,
            long budgetBytes,
            boolean full) {
        /** {@code e} as the file holds it. */
        public static Epoch of(RestartCacheEpochs.Epoch e) {
            return new Epoch(
                    e.epoch(),
                    e.hits(),
                    e.misses(),
                    e.copied(),
                    e.originals(),
                    e.damaged(),
                    e.filledBytes(),
                    e.total().hits(),
                    e.total().misses(),
                    e.total().copied(),
                    e.total().originals(),
                    e.total().damaged(),
                    e.total().filledBytes(),
                    e.total().usedBytes(),
                    e.total().budgetBytes(),
                    e.total().full());
        }
    }

    private static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .build();

    private final Loader loader;
    private final Path file;
    private final String prefix;
    private int reported;

    /**
     * A log of {@code loader}'s restart-cache epochs.
     *
     * @param file where to append them (null: standard error only)
     * @param prefix what each line on standard error starts with ({@code "stoke serve: "})
     */
    public RestartCacheLogFile(Loader loader, Path file, String prefix) {
        this.loader = loader;
        this.file = file;
        this.prefix = prefix;
    }

    /** Says the epochs ended since the last call. */
    public void report(PrintWriter err) {
        List<RestartCacheEpochs.Epoch> epochs = loader.restartCacheEpochs(); // a view the publisher adds to
        int ended = epochs.size();
        if (ended == reported) {
            return;
        }
        StringBuilder lines = new StringBuilder();
        for (RestartCacheEpochs.Epoch e : epochs.subList(reported, ended)) {
            err.println(prefix + e.sentence());
            lines.append(line(Epoch.of(e))).append('\n');
        }
        err.flush();
        reported = ended;
        if (file != null) {
            try {
                // As the auto-workers log: a link planted at a named file is refused (ELOOP);
                // /dev/fd/N (stoke.DataLoader's anonymous file, inherited) is itself a link.
                Files.writeString(
                        file, lines, StandardCharsets.UTF_8, InheritedDescriptor.names(file) ? INHERITED : NAMED);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + file, e);
            }
        }
    }

    /** One epoch as its line of the file (no newline). */
    public static String line(Epoch e) {
        try {
            return JSON.writeValueAsString(e);
        } catch (IOException x) {
            throw new UncheckedIOException(x);
        }
    }

    /** The epochs in {@code file}; a line that is not one is one sentence naming the file. */
    public static List<Epoch> read(Path file) throws IOException {
        List<Epoch> epochs = new ArrayList<>();
        int n = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            n++;
            try {
                epochs.add(JSON.readValue(line, Epoch.class));
            } catch (IOException e) {
                throw new IOException(file + " line " + n + " is not a restart-cache epoch: " + line, e);
            }
        }
        return epochs;
    }
}
