package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.testing.CapturedRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The commands on a Delta Lake table written by Delta Lake (the Python client's fixture,
 * DeltaFixtures: 24 rows at version 0, 18 after a DELETE at version 1, 24 after an append at
 * version 2, read from a checkpoint): each snapshot's rows, chosen by {@code --table-version},
 * {@code --as-of} or the spec's suffix, and the folder's loose files never; and the same of an
 * Iceberg table written by Iceberg's Java library.
 */
class LakehouseCommandsTest {
    static final Path TABLE = Path.of(System.getProperty("user.dir"))
            .resolveSibling("clients/python/tests/data/delta-images")
            .toAbsolutePath();

    @TempDir
    Path tmp;

    static String[] run(String... args) {
        return CapturedRun.of(() -> Main.execute(args));
    }

    long benchImages(String... extra) throws Exception {
        return bench(TABLE.toString(), "Delta Lake table at version", extra);
    }

    /** The images {@code stoke bench SPEC EXTRA...} read, where its standard error says {@code said}. */
    long bench(String spec, String said, String... extra) throws Exception {
        Path json = tmp.resolve("bench-" + System.nanoTime() + ".json");
        List<String> args = new ArrayList<>(List.of(
                "bench",
                spec,
                "--batch-size",
                "4",
                "--no-warmup",
                "--resize",
                "24",
                "--crop",
                "16",
                "--json",
                json.toString()));
        args.addAll(List.of(extra));
        String[] r = run(args.toArray(String[]::new));
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[2].contains(said), r[2]);
        return new ObjectMapper().readTree(json.toFile()).get("images").asLong();
    }

    @Test
    void eachSnapshotByItsVersionOrTime() throws Exception {
        assertTrue(Files.isDirectory(TABLE.resolve("_delta_log")), TABLE.toString());
        assertEquals(24, benchImages());
        assertEquals(24, benchImages("--table-version", "0"));
        assertEquals(18, benchImages("--table-version", "1"));
        assertEquals(24, benchImages("--table-version", "2"));
        // A time before the first commit or after the last names no snapshot, as in Delta Lake's own
        // readers. (The times of a checked-out table's commits are its files' times: DeltaTableTest
        // reads a table by a time between two commits.)
        for (String time : List.of("2000-01-01", "2100-01-01T00:00:00Z")) {
            String[] r = run("bench", TABLE.toString(), "--as-of", time, "--no-warmup");
            assertTrue(!"0".equals(r[0]) && r[2].contains(TABLE.toString()) && r[2].contains("timestamp"), r[1] + r[2]);
        }
    }

    @Test
    void bothOrAMalformedTimeAreRefusedInOneSentence() {
        String[] both = run("bench", TABLE.toString(), "--table-version", "1", "--as-of", "2026-11-29", "--no-warmup");
        assertTrue(!"0".equals(both[0]), both[1] + both[2]);
        assertTrue(both[2].contains("--table-version and --as-of both name a snapshot"), both[2]);
        String[] bad = run("bench", TABLE.toString(), "--as-of", "yesterday", "--no-warmup");
        assertTrue(!"0".equals(bad[0]), bad[1] + bad[2]);
        assertTrue(bad[2].contains("not an ISO-8601 time"), bad[2]);
    }

    /**
     * The Python client's Iceberg fixture (IcebergFixtures, written by Iceberg's Java library): 24 rows
     * at its first snapshot, 18 after a delete, 24 after an append; read where it was copied to, not
     * where its metadata says it was written.
     */
    static final Path ICEBERG = TABLE.resolveSibling("iceberg-images");

    static final List<String> ICEBERG_SNAPSHOTS =
            List.of("2645794702169323198", "6115693495836072155", "7613922452491425802");

    /** {@link #bench} of the Iceberg fixture at {@code spec}, read where it was copied to. */
    long benchIceberg(String spec, String... extra) throws Exception {
        return bench(spec, "Apache Iceberg table at snapshot", extra);
    }

    @Test
    void eachIcebergSnapshotByItsIdOrTime() throws Exception {
        assertEquals(24, bench(ICEBERG.toString(), "its files read under " + ICEBERG));
        assertEquals(24, benchIceberg(ICEBERG.toString(), "--table-version", ICEBERG_SNAPSHOTS.get(0)));
        assertEquals(18, benchIceberg(ICEBERG.toString(), "--table-version", ICEBERG_SNAPSHOTS.get(1)));
        assertEquals(18, benchIceberg(ICEBERG + "@v" + ICEBERG_SNAPSHOTS.get(1)));
        assertEquals(24, benchIceberg(ICEBERG.toString(), "--as-of", "2100-01-01"));
        String[] r = run("bench", ICEBERG.toString(), "--as-of", "2000-01-01", "--no-warmup");
        assertTrue(!"0".equals(r[0]) && r[2].contains("no snapshot committed at or before"), r[1] + r[2]);
        r = run("bench", ICEBERG + "/data/*.parquet", "--no-warmup");
        assertTrue(!"0".equals(r[0]) && r[2].contains("an Apache Iceberg table"), r[1] + r[2]);
    }

    @Test
    void theTablesLooseFilesAreRefused() {
        String[] r = run("bench", TABLE + "/*.parquet", "--no-warmup");
        assertTrue(!"0".equals(r[0]), r[1] + r[2]);
        assertTrue(r[2].contains("a Delta Lake table"), r[2]);
    }
}
