package io.stoke.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.stoke.loader.autoworkers.AutoWorkersLog;
import io.stoke.loader.autoworkers.WorkerChange;
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
import java.util.Locale;

/**
 * The auto-workers log ({@code stoke serve --auto-workers-log}): each change of an auto loader's
 * active workers, said once as it is made, as a line on standard error and, given a file, one JSON
 * object per line appended to it, {@code {"at_s": S, "from_workers": F, "to_workers": T, "reason": "..."}}
 * (what {@code stoke.DataLoader.tuning()} reads). This class is the one definition of the file
 * (docs/shared-memory.md, "The auto-workers log"). Called from one thread, the server's loop.
 */
public final class AutoWorkersLogFile {
    private static final OpenOption[] NAMED = {
        StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS
    };
    private static final OpenOption[] INHERITED = {StandardOpenOption.APPEND, StandardOpenOption.WRITE};

    /** One change, one line of the file. */
    public record Change(double atS, int fromWorkers, int toWorkers, String reason) {
        /** {@code d} as the file holds it. */
        public static Change of(WorkerChange d) {
            return new Change(d.atNanos() / 1e9, d.fromWorkers(), d.toWorkers(), d.reason());
        }
    }

    private static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .build();

    private final AutoWorkersLog log;
    private final Path file;
    private final String prefix;
    private int reported;

    /**
     * A log of {@code log}'s changes.
     *
     * @param file where to append them (null: standard error only)
     * @param prefix what each line on standard error starts with ({@code "stoke serve: "})
     */
    public AutoWorkersLogFile(AutoWorkersLog log, Path file, String prefix) {
        this.log = log;
        this.file = file;
        this.prefix = prefix;
    }

    /** Where an auto loader's workers ended and every change with its reason, as table rows. */
    public static String summary(AutoWorkersLog t) {
        StringBuilder s = new StringBuilder();
        s.append(String.format(
                Locale.ROOT,
                "  %-22s %d active at the end, of at most %d%s; %d change%s in %d windows%n",
                "auto workers",
                t.activeWorkers(),
                t.maxWorkers(),
                t.yielding() ? ", yielding to the consumer" : "",
                t.decisions().size(),
                t.decisions().size() == 1 ? "" : "s",
                t.windowCount()));
        for (WorkerChange d : t.decisions()) {
            s.append(String.format(Locale.ROOT, "  %-22s %s%n", "", d));
        }
        return s.toString();
    }

    /** Says the changes made since the last call. */
    public void report(PrintWriter err) {
        List<WorkerChange> decisions = log.decisions();
        if (decisions.size() == reported) {
            return;
        }
        StringBuilder lines = new StringBuilder();
        for (WorkerChange d : decisions.subList(reported, decisions.size())) {
            err.println(prefix + d);
            lines.append(line(Change.of(d))).append('\n');
        }
        err.flush();
        reported = decisions.size();
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

    /** One change as its line of the file (no newline). */
    public static String line(Change c) {
        try {
            return JSON.writeValueAsString(c);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The changes in {@code file}; a line that is not one is one sentence naming the file. */
    public static List<Change> read(Path file) throws IOException {
        List<Change> changes = new ArrayList<>();
        int n = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            n++;
            try {
                changes.add(JSON.readValue(line, Change.class));
            } catch (IOException e) {
                throw new IOException(file + " line " + n + " is not an auto-workers change: " + line, e);
            }
        }
        return changes;
    }
}
