package io.stoke.serve;

import io.stoke.loader.autoworkers.AutoWorkersLog;
import io.stoke.loader.autoworkers.WorkerChange;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
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
    /** One change, one line of the file. */
    public record Change(double atS, int fromWorkers, int toWorkers, String reason) {
        /** {@code d} as the file holds it. */
        public static Change of(WorkerChange d) {
            return new Change(d.atNanos() / 1e9, d.fromWorkers(), d.toWorkers(), d.reason());
        }
    }

    private final AutoWorkersLog log;
    private final JsonLinesLog<WorkerChange, Change> lines;

    /**
     * A log of {@code log}'s changes.
     *
     * @param file where to append them (null: standard error only)
     * @param prefix what each line on standard error starts with ({@code "stoke serve: "})
     */
    public AutoWorkersLogFile(AutoWorkersLog log, Path file, String prefix) {
        this.log = log;
        this.lines = new JsonLinesLog<>(file, prefix, WorkerChange::toString, Change::of);
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
        lines.report(log.decisions(), err);
    }

    /** One change as its line of the file (no newline). */
    public static String line(Change c) {
        return JsonLinesLog.line(c);
    }

    /** The changes in {@code file}; a line that is not one is one sentence naming the file. */
    public static List<Change> read(Path file) throws IOException {
        return JsonLinesLog.read(file, Change.class, "an auto-workers change");
    }
}
