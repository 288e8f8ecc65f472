package io.stoke.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A side log reads a list that another thread adds to while it says the entries (the restart cache's
 * epochs, a view of a copy-on-write list that the publisher appends to): each entry is said and
 * filed once, in order, whatever is added meanwhile, and what is added is said at the next call.
 */
class JsonLinesLogTest {
    record Entry(int n) {}

    @Test
    void entriesAddedWhileTheLogSaysOthersAreSaidNextTimeOnceEach(@TempDir Path tmp) throws Exception {
        List<Integer> list = new CopyOnWriteArrayList<>(List.of(0, 1));
        List<Integer> view = Collections.unmodifiableList(list);
        Path file = tmp.resolve("log.jsonl");
        // Saying an entry adds one, as an epoch ending while the server's loop reports would.
        JsonLinesLog<Integer, Entry> log = new JsonLinesLog<>(
                file,
                "t: ",
                n -> {
                    if (list.size() < 6) {
                        list.add(list.size());
                    }
                    return "entry " + n;
                },
                Entry::new);
        StringWriter said = new StringWriter();
        PrintWriter err = new PrintWriter(said, true);
        log.report(view, err);
        log.report(view, err);
        log.report(view, err);
        assertEquals(
                "t: entry 0\nt: entry 1\nt: entry 2\nt: entry 3\nt: entry 4\nt: entry 5\n",
                said.toString().replace(System.lineSeparator(), "\n"));
        assertEquals(
                List.of(new Entry(0), new Entry(1), new Entry(2), new Entry(3), new Entry(4), new Entry(5)),
                JsonLinesLog.read(file, Entry.class, "an entry"));
    }
}
