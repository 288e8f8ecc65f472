package io.stoke.cli;

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
import java.util.List;
import java.util.Locale;

/**
 * Says each change of an auto loader's workers once, as it is made: a line on standard error, and,
 * given a file, one JSON object per line appended to it (what {@code stoke.DataLoader.tuning()}
 * reads). Called from one thread, the command's loop.
 */
final class TuningReport {
    private static final OpenOption[] NAMED = {
        StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS
    };
    private static final OpenOption[] INHERITED = {StandardOpenOption.APPEND, StandardOpenOption.WRITE};

    /** One change, as written to the file. */
    record Change(double atS, int fromWorkers, int toWorkers, String reason) {}

    private static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .build();

    private final AutoWorkersLog log;
    private final Path file;
    private int reported;

    TuningReport(AutoWorkersLog log, Path file) {
        this.log = log;
        this.file = file;
    }

    /** Where an auto loader's workers ended and every change with its reason, as table rows. */
    static String summary(AutoWorkersLog t) {
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

    /** Reports the changes made since the last call. */
    void report(PrintWriter err) {
        List<WorkerChange> decisions = log.decisions();
        if (decisions.size() == reported) {
            return;
        }
        StringBuilder lines = new StringBuilder();
        for (WorkerChange d : decisions.subList(reported, decisions.size())) {
            err.println("stoke serve: " + d);
            try {
                lines.append(JSON.writeValueAsString(
                                new Change(d.atNanos() / 1e9, d.fromWorkers(), d.toWorkers(), d.reason())))
                        .append('\n');
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
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
}
