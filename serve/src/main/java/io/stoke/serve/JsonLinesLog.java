package io.stoke.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
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
import java.util.function.Function;

/**
 * What the server's side logs share ({@link AutoWorkersLogFile}, {@link RestartCacheLogFile}): a
 * list that only grows, whose new entries are said once each, as a sentence on standard error and,
 * given a file, as one snake_case JSON object per line appended to it. Each log class defines its
 * own record, its sentences and its file's specification; this holds the mechanics once. Called
 * from one thread, the server's loop.
 *
 * @param <S> what the list holds
 * @param <R> the record one entry is in the file
 */
final class JsonLinesLog<S, R> {
    private static final OpenOption[] NAMED = {
        StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS
    };
    private static final OpenOption[] INHERITED = {StandardOpenOption.APPEND, StandardOpenOption.WRITE};

    private static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .build();

    private final Path file;
    private final String prefix;
    private final Function<S, String> sentence;
    private final Function<S, R> record;
    private int reported;

    /**
     * @param file where to append the records (null: standard error only)
     * @param prefix what each line on standard error starts with ({@code "stoke serve: "})
     * @param sentence an entry as its line on standard error (without the prefix)
     * @param record an entry as its record in the file
     */
    JsonLinesLog(Path file, String prefix, Function<S, String> sentence, Function<S, R> record) {
        this.file = file;
        this.prefix = prefix;
        this.sentence = sentence;
        this.record = record;
    }

    /** Says the entries of {@code all} added since the last call. */
    void report(List<S> all, PrintWriter err) {
        int ended = all.size();
        if (ended == reported) {
            return;
        }
        StringBuilder lines = new StringBuilder();
        // By index, to the size read above: the list grows under another thread (the publisher adds
        // an epoch as its last batch goes out), and a copy-on-write list's subList view throws
        // ConcurrentModificationException once its list changed; get(i) of an older entry never does.
        for (int i = reported; i < ended; i++) {
            S s = all.get(i);
            err.println(prefix + sentence.apply(s));
            lines.append(line(record.apply(s))).append('\n');
        }
        err.flush();
        reported = ended;
        if (file != null) {
            try {
                // A link planted at a named file is refused (ELOOP), not appended through; /dev/fd/N
                // (stoke.DataLoader's anonymous file, inherited) is itself a link, to the file meant.
                Files.writeString(
                        file, lines, StandardCharsets.UTF_8, InheritedDescriptor.names(file) ? INHERITED : NAMED);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + file, e);
            }
        }
    }

    /** One record as its line of a file (no newline). */
    static String line(Object record) {
        try {
            return JSON.writeValueAsString(record);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The records in {@code file}; a line that is not one is one sentence naming the file and {@code what}. */
    static <R> List<R> read(Path file, Class<R> type, String what) throws IOException {
        List<R> records = new ArrayList<>();
        int n = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            n++;
            try {
                records.add(JSON.readValue(line, type));
            } catch (IOException e) {
                throw new IOException(file + " line " + n + " is not " + what + ": " + line, e);
            }
        }
        return records;
    }
}
