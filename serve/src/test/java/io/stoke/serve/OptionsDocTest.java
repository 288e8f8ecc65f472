package io.stoke.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** docs/options.md lists every option of the table, each under its name and flag, and no other. */
class OptionsDocTest {
    private static final Path DOC = Path.of("..", "docs", "options.md");

    @Test
    void theDocListsEveryOptionOfTheTable() throws IOException {
        List<String> rows = new ArrayList<>();
        for (String line : Files.readAllLines(DOC)) {
            if (line.matches("\\| `[a-z_]+` \\| `--[a-z-]+` \\|.*")) {
                rows.add(line.substring(0, line.indexOf('|', line.indexOf('|', 1) + 1) + 1));
            }
        }
        List<String> expected = OptionTable.shipped().options().stream()
                .map(o -> "| `" + o.name() + "` | `" + o.cli() + "` |")
                .toList();
        assertEquals(expected, rows, DOC + "'s list of options, in the table's order");
    }
}
