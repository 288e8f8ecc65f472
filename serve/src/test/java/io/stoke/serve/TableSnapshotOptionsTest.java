package io.stoke.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --table-version}, {@code --as-of} and {@code --start-state} onto the spec a Delta Lake
 * table's snapshot is opened by (the Python client's fixture, a table delta-spark wrote).
 */
class TableSnapshotOptionsTest {
    static final Path TABLE = Path.of(System.getProperty("user.dir"))
            .resolveSibling("clients/python/tests/data/delta-images")
            .toAbsolutePath();

    @TempDir
    Path tmp;

    static String spec(LoaderSettings settings) {
        return new LoaderSetup(settings).dataSpec(TABLE.toString());
    }

    @Test
    void aVersionOrATimeIsTheSpecsSuffix() {
        assertEquals(TABLE.toString(), spec(LoaderSettings.defaults()));
        assertEquals(TABLE + "@v1", spec(LoaderSettings.defaults().set("table_version", "1")));
        assertEquals(TABLE + "@2026-11-29", spec(LoaderSettings.defaults().set("as_of", "2026-11-29")));
        IllegalArgumentException both = assertThrows(
                IllegalArgumentException.class,
                () -> spec(LoaderSettings.defaults().set("table_version", "1").set("as_of", "2026-11-29")));
        assertTrue(both.getMessage().contains("both name a snapshot"), both.getMessage());
        IllegalArgumentException notATable = assertThrows(
                IllegalArgumentException.class,
                () -> new LoaderSetup(LoaderSettings.defaults().set("table_version", "1")).dataSpec(tmp.toString()));
        assertTrue(
                notATable.getMessage().contains("is neither (no _delta_log/ nor metadata/*.metadata.json in it)"),
                notATable.getMessage());
    }

    @Test
    void aStartStateTakenOverASnapshotReadsThatSnapshot() throws Exception {
        Path state = tmp.resolve("state.json");
        Files.writeString(state, "[{\"epoch\": 0, \"_num_yielded\": 1, \"table\": \"" + TABLE + "@v1\"}]");
        assertEquals(TABLE + "@v1", spec(LoaderSettings.defaults().set("start_state", state.toString())));
        // A version the user names is kept; a state over another table pins nothing.
        assertEquals(
                TABLE + "@v2",
                spec(LoaderSettings.defaults()
                        .set("start_state", state.toString())
                        .set("table_version", "2")));
        Files.writeString(state, "{\"epoch\": 0, \"_num_yielded\": 1, \"table\": \"/elsewhere/table@v7\"}");
        assertEquals(TABLE.toString(), spec(LoaderSettings.defaults().set("start_state", state.toString())));
        Files.writeString(state, "{\"epoch\": 0, \"_num_yielded\": 1}");
        assertEquals(TABLE.toString(), spec(LoaderSettings.defaults().set("start_state", state.toString())));
    }
}
