package io.stoke.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.embed.EmbeddingTable;
import io.stoke.lakehouse.OutputTable;
import io.stoke.loader.testing.TestTars;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spark-embed --output-table}: the output made a Delta Lake or Apache Iceberg table, read back
 * by each format's own reader (Delta Lake's Spark connector; Iceberg's generic reader over a
 * {@code HadoopTables} table), with the rows of the Parquet files themselves, each once, a rerun's
 * shards appended as a new version and older versions read by time travel. Drivers appending at
 * once add each file once. The outputs' folders have a space in their names.
 */
class OutputTableTest {
    @TempDir
    static Path tmp;

    /** Shards 0 and 1 (the first run's input); shards 0 to 3 (the rerun's). */
    static Path firstTwo;

    static Path all;

    @BeforeAll
    static void start() throws IOException {
        firstTwo = Files.createDirectories(tmp.resolve("first-two"));
        all = Files.createDirectories(tmp.resolve("all"));
        for (int s = 0; s < SparkEmbedTest.SHARDS; s++) {
            Path shard = all.resolve("train-" + s + ".tar");
            TestTars.labelledShard(shard, s, SparkEmbedTest.PER_SHARD);
            if (s < 2) {
                Files.copy(shard, firstTwo.resolve(shard.getFileName()));
            }
        }
        SparkEmbedTest.spark = SparkEmbed.session(
                "local[2,2]",
                Map.of(
                        "spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension",
                        "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"));
    }

    @AfterAll
    static void stop() {
        SparkEmbedTest.stop();
    }

    static SparkEmbed.Request request(Path data, Path out, OutputTable.Format table) {
        return SparkEmbedTest.request(data.toString(), SparkEmbedTest.MODEL, out.toString(), 256)
                .withOutputTable(table);
    }

    /** The Parquet files' rows, by Spark's Parquet reader, sorted by (shard, row). */
    static List<Row> files(Path out) throws IOException {
        String[] names;
        try (Stream<Path> s = Files.list(out)) {
            names = s.map(Path::toString)
                    .filter(n -> n.endsWith(".parquet"))
                    .sorted()
                    .toArray(String[]::new);
        }
        return SparkEmbedTest.spark
                .read()
                .parquet(names)
                .orderBy("shard", "row")
                .collectAsList();
    }

    @Test
    void aDeltaTableHoldsEveryRunsShardsOnceEachVersionItsOwn() throws Exception {
        Path out = tmp.resolve("delta out");
        Manifest first = SparkEmbedTest.run(request(firstTwo, out, OutputTable.Format.DELTA));
        assertEquals("Delta Lake table at version 0 (2 files added, 2 in all)", first.table());
        Manifest second = SparkEmbedTest.run(request(all, out, OutputTable.Format.DELTA));
        assertEquals(2, second.committed());
        assertEquals("Delta Lake table at version 1 (2 files added, 4 in all)", second.table());
        Manifest third = SparkEmbedTest.run(request(all, out, OutputTable.Format.DELTA));
        assertEquals(0, third.attempts().launched());
        assertEquals("Delta Lake table at version 1 (0 files added, 4 in all)", third.table(), "no new version");

        List<Row> table = SparkEmbedTest.spark
                .read()
                .format("delta")
                .load(out.toString())
                .orderBy("shard", "row")
                .collectAsList();
        SparkEmbedTest.assertOncePerSample(table, SparkEmbedTest.SHARDS * SparkEmbedTest.PER_SHARD);
        List<Row> files = files(out);
        assertEquals(files.size(), table.size());
        for (int i = 0; i < files.size(); i++) {
            assertEquals(files.get(i).getString(0), table.get(i).getString(0));
            assertEquals(files.get(i).getString(1), table.get(i).getString(1));
            assertEquals(files.get(i).getInt(3), table.get(i).getInt(3));
            assertArrayEquals(SparkEmbedTest.floats(files.get(i)), SparkEmbedTest.floats(table.get(i)), 0f);
        }
        List<Row> version0 = SparkEmbedTest.spark
                .read()
                .format("delta")
                .option("versionAsOf", 0)
                .load(out.toString())
                .collectAsList();
        SparkEmbedTest.assertOncePerSample(version0, 2 * SparkEmbedTest.PER_SHARD);

        IllegalArgumentException loose =
                assertThrows(IllegalArgumentException.class, () -> SparkEmbedTest.run(request(all, out, null)));
        assertTrue(
                loose.getMessage().contains("is a Delta Lake table")
                        && loose.getMessage().contains("pass --output-table delta"),
                loose.getMessage());
        IllegalArgumentException other = assertThrows(
                IllegalArgumentException.class,
                () -> SparkEmbedTest.run(request(all, out, OutputTable.Format.ICEBERG)));
        assertTrue(other.getMessage().contains("not made an Apache Iceberg table too"), other.getMessage());
    }

    @Test
    void anIcebergTableHoldsEveryRunsShardsOnceEachSnapshotItsOwn() throws Exception {
        Path out = tmp.resolve("iceberg out");
        Manifest first = SparkEmbedTest.run(request(firstTwo, out, OutputTable.Format.ICEBERG));
        assertTrue(
                first.table().startsWith("Apache Iceberg table at snapshot ")
                        && first.table().endsWith("(2 files added, 2 in all)"),
                first.table());
        // An earlier run's loose files are appended when a rerun makes the output a table.
        Path loose = tmp.resolve("iceberg-from-loose");
        SparkEmbedTest.run(request(firstTwo, loose, null));
        Manifest converted = SparkEmbedTest.run(request(all, loose, OutputTable.Format.ICEBERG));
        assertTrue(converted.table().endsWith("(4 files added, 4 in all)"), converted.table());

        Manifest second = SparkEmbedTest.run(request(all, out, OutputTable.Format.ICEBERG));
        assertTrue(second.table().endsWith("(2 files added, 4 in all)"), second.table());

        Table table = new HadoopTables(new Configuration()).load(out.toString());
        List<Record> records = records(IcebergGenerics.read(table).build());
        assertEquals(SparkEmbedTest.SHARDS * SparkEmbedTest.PER_SHARD, records.size());
        records.sort((a, b) -> {
            int c = ((String) a.getField("shard")).compareTo((String) b.getField("shard"));
            return c != 0 ? c : Long.compare((Long) a.getField("row"), (Long) b.getField("row"));
        });
        List<Row> files = files(out);
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < files.size(); i++) {
            Record r = records.get(i);
            assertTrue(seen.add(r.getField("shard") + "#" + r.getField("row")), "twice: " + r);
            assertEquals(files.get(i).getString(0), r.getField("shard"));
            assertEquals(files.get(i).getString(1), r.getField("key"), "columns found by the name mapping");
            assertEquals(files.get(i).getInt(3), r.getField("label"));
            float[] expected = SparkEmbedTest.floats(files.get(i));
            List<?> values = (List<?>) r.getField("embedding");
            float[] actual = new float[values.size()];
            for (int k = 0; k < actual.length; k++) {
                actual[k] = (Float) values.get(k);
            }
            assertArrayEquals(expected, actual, 0f);
        }
        List<Snapshot> snapshots = new ArrayList<>();
        table.snapshots().forEach(snapshots::add);
        assertEquals(2, snapshots.size());
        assertEquals(
                2 * SparkEmbedTest.PER_SHARD,
                records(IcebergGenerics.read(table)
                                .useSnapshot(snapshots.get(0).snapshotId())
                                .build())
                        .size());
    }

    /** Drivers appending the same files to one table at once: each version created once, each file in the table once. */
    @Test
    void driversAppendingAtOnceAddEachFileOnce() throws Exception {
        Path out = tmp.resolve("parquet-only");
        SparkEmbedTest.run(request(all, out, null));
        List<OutputTable.DataFile> files = new ArrayList<>();
        try (Stream<Path> s = Files.list(out)) {
            s.filter(p -> p.toString().endsWith(".parquet"))
                    .sorted()
                    .forEach(p ->
                            files.add(new OutputTable.DataFile(p.getFileName().toString(), SparkEmbedTest.PER_SHARD)));
        }
        assertEquals(SparkEmbedTest.SHARDS, files.size());
        for (OutputTable.Format format : OutputTable.Format.values()) {
            Path dir = Files.createDirectories(tmp.resolve("racing-" + format));
            for (OutputTable.DataFile f : files) {
                Files.copy(out.resolve(f.name()), dir.resolve(f.name()));
            }
            int drivers = 4;
            ExecutorService pool = Executors.newFixedThreadPool(drivers);
            try {
                List<Future<OutputTable.Appended>> appended = new ArrayList<>();
                for (int d = 0; d < drivers; d++) {
                    // Each driver adds one file of its own and all the others' too.
                    List<OutputTable.DataFile> mine = new ArrayList<>(files);
                    java.util.Collections.rotate(mine, d);
                    Callable<OutputTable.Appended> append = () -> OutputTable.append(
                            format, dir.toString(), EmbeddingTable.SCHEMA, mine, name -> size(dir.resolve(name)), null);
                    appended.add(pool.submit(append));
                }
                int added = 0;
                for (Future<OutputTable.Appended> f : appended) {
                    added += f.get().added();
                }
                assertEquals(SparkEmbedTest.SHARDS, added, format + ": each file added by one driver");
            } finally {
                pool.shutdownNow();
            }
            long rows = format == OutputTable.Format.DELTA
                    ? SparkEmbedTest.spark
                            .read()
                            .format("delta")
                            .load(dir.toString())
                            .count()
                    : records(IcebergGenerics.read(new HadoopTables(new Configuration()).load(dir.toString()))
                                    .build())
                            .size();
            assertEquals((long) SparkEmbedTest.SHARDS * SparkEmbedTest.PER_SHARD, rows, format.toString());
        }
    }

    static long size(Path p) {
        try {
            return Files.size(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Record> records(CloseableIterable<Record> read) throws IOException {
        List<Record> out = new ArrayList<>();
        try (read) {
            for (Record r : read) {
                out.add(r.copy());
            }
        }
        return out;
    }
}
