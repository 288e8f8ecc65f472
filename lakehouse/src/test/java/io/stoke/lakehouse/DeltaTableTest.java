package io.stoke.lakehouse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.testing.TestImages;
import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteOptions;
import io.stoke.remote.S3ObjectStore;
import io.stoke.remote.ShardServer;
import io.stoke.remote.TestS3Server;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Delta Lake tables written by Delta Lake itself (delta-spark 4.4 on a local Spark 4.2), read by
 * Stoke as their snapshots: each version's rows exactly once, with the image bytes and labels Spark's
 * own Delta reader gives for that version, after a DELETE and an OPTIMIZE left removed files in the
 * folder; never the folder's loose files; refused, naming the feature, where Stoke would read other
 * rows than the table's.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
@SuppressWarnings("try") // TestAwsProperties is held for its settings alone
class DeltaTableTest {
    static final int ROWS = 600;

    @TempDir
    static Path tmp;

    static SparkSession spark;
    static Path table;
    static final List<Timestamp> committed = new ArrayList<>();

    static final StructType SCHEMA = new StructType()
            .add("image", new StructType().add("bytes", DataTypes.BinaryType).add("path", DataTypes.StringType))
            .add("label", DataTypes.LongType);

    @BeforeAll
    static void writeTable() throws Exception {
        spark = DeltaSpark.session("stoke-delta-test", 2);
        table = tmp.resolve("images");
        // Version 0: three parts of the Hub's image layout. A checkpoint every two commits: the later
        // snapshots are read from a Parquet checkpoint, the earlier from JSON commits alone.
        spark.createDataFrame(rows(0, ROWS), SCHEMA)
                .repartition(3)
                .write()
                .format("delta")
                .option("delta.checkpointInterval", "2")
                .save(table.toString());
        // Version 1: a DELETE rewrites each part without a fifth of its rows (copy-on-write).
        spark.sql("DELETE FROM delta.`" + table + "` WHERE label % 5 = 0");
        // Version 2: an append; version 3: OPTIMIZE compacts the parts into one and removes them.
        spark.createDataFrame(rows(ROWS, 90), SCHEMA)
                .repartition(2)
                .write()
                .format("delta")
                .mode("append")
                .save(table.toString());
        spark.sql("OPTIMIZE delta.`" + table + "`");
        for (Row r : spark.sql("DESCRIBE HISTORY delta.`" + table + "`")
                .select("version", "timestamp")
                .collectAsList()) {
            while (committed.size() <= r.getLong(0)) {
                committed.add(null);
            }
            committed.set((int) r.getLong(0), r.getTimestamp(1));
        }
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    static List<Row> rows(int first, int n) {
        List<Row> out = new ArrayList<>(n);
        for (int i = first; i < first + n; i++) {
            out.add(RowFactory.create(
                    RowFactory.create(TestImages.jpeg(16 + i % 7, 12 + i % 5, i), "img-" + i + ".jpg"),
                    (long) (i % 10)));
        }
        return out;
    }

    /** Spark's own read of version {@code v}: each row's image digest and label, counted. */
    static Map<String, Integer> sparkRows(long v) throws Exception {
        return sparkRows(table, v);
    }

    static Map<String, Integer> sparkRows(Path table, long v) throws Exception {
        Map<String, Integer> out = new TreeMap<>();
        for (Row r : spark.read()
                .format("delta")
                .option("versionAsOf", v)
                .load(table.toString())
                .select("image.bytes", "label")
                .collectAsList()) {
            out.merge(digest((byte[]) r.get(0)) + " " + r.getLong(1), 1, Integer::sum);
        }
        return out;
    }

    /** Stoke's read of {@code spec}: each sample's image digest and label, counted. */
    static Map<String, Integer> stokeRows(String spec) throws Exception {
        try (Dataset d = Datasets.openLocal(spec)) {
            return rows(d);
        }
    }

    static Map<String, Integer> rows(Dataset d) throws Exception {
        Map<String, Integer> out = new TreeMap<>();
        try (SampleReader reader = d.reader(1 << 20)) {
            for (int i = 0; i < d.size(); i++) {
                assertEquals(SampleStatus.OK, reader.read(i), reader.message());
                byte[] bytes = reader.bytes().asSlice(0, reader.length()).toArray(ValueLayout.JAVA_BYTE);
                reader.done();
                out.merge(digest(bytes) + " " + d.label(i), 1, Integer::sum);
            }
        }
        return out;
    }

    static String digest(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b), 0, 8);
    }

    static long parquetFilesInFolder() throws Exception {
        try (Stream<Path> s = Files.list(table)) {
            return s.filter(p -> p.toString().endsWith(".parquet")).count();
        }
    }

    @Test
    void eachVersionIsItsOwnRowsOnceAsSparkReadsThem() throws Exception {
        // The folder keeps every part ever written, the removed ones until VACUUM; the snapshot is the compacted one.
        TableSnapshot snapshot = LakehouseDatasets.snapshot(table.toString(), TableColumns.DEFAULT);
        assertEquals(3, snapshot.version());
        assertEquals(1, snapshot.files().size(), snapshot.files().toString());
        assertTrue(parquetFilesInFolder() >= 4, "removed files stay until VACUUM: " + parquetFilesInFolder());
        try (Stream<Path> log = Files.list(table.resolve("_delta_log"))) {
            assertTrue(log.anyMatch(p -> p.getFileName().toString().endsWith(".checkpoint.parquet")), "a checkpoint");
        }
        Map<String, Integer> latest = sparkRows(3);
        assertEquals(
                ROWS * 4 / 5 + 90,
                latest.values().stream().mapToInt(Integer::intValue).sum());
        assertTrue(latest.values().stream().allMatch(c -> c == 1));
        assertEquals(latest, stokeRows(table.toString()));
        for (long v = 0; v <= 3; v++) {
            assertEquals(sparkRows(v), stokeRows(table + "@v" + v), "version " + v);
        }
        assertNotEquals(sparkRows(0), sparkRows(1));
    }

    @Test
    void timeTravelByTimeGivesTheVersionCommittedThen() throws Exception {
        Timestamp second = committed.get(1);
        String asOf = second.toInstant().toString();
        assertEquals(sparkRows(1), stokeRows(table + "@" + asOf));
        TableSnapshot s = LakehouseDatasets.snapshot(table + "@" + asOf, TableColumns.DEFAULT);
        assertEquals(1, s.version());
        assertEquals(table + "@v1", s.pinnedSpec());
    }

    @Test
    void theSameSnapshotsFromS3ByListingsAndRangedReadsAlone(@TempDir Path home) throws Exception {
        try (TestS3Server.TestAwsProperties properties = new TestS3Server.TestAwsProperties(home);
                TestS3Server s3 = new TestS3Server()) {
            System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
            s3.createBucket("lake", false);
            upload(s3, table, "images/");
            RecordingStore recorded =
                    new RecordingStore(ObjectStore.forUrl("s3://lake/images/", RemoteOptions.defaults()));
            Map<String, Integer> rows;
            long dataBytes = 0;
            try (ShardDataset d =
                    LakehouseDatasets.open("s3://lake/images", TableColumns.DEFAULT, 64L << 20, recorded)) {
                rows = rows(d);
                for (String url : recorded.rangedBytes.keySet()) {
                    if (url.endsWith(".parquet") && !url.contains("/_delta_log/")) {
                        dataBytes += recorded.rangedBytes.get(url).get();
                    }
                }
                assertEquals("s3://lake/images@v3", d.snapshot());
            }
            assertEquals(sparkRows(3), rows);
            assertEquals(0, recorded.calls("read-whole"), recorded.calls.toString());
            assertEquals(0, recorded.calls("write"), recorded.calls.toString());
            assertTrue(recorded.calls("read-range") > 0 && dataBytes > 0, recorded.calls.toString());
            // As a user names it: the folder (its listing shows the log), or a version after '@'.
            UrlDatasetProvider.ShardCache cache = new UrlDatasetProvider.ShardCache(64L << 20, null);
            try (Dataset d = Datasets.openLocalOrUrl("s3://lake/images/", cache)) {
                assertEquals(sparkRows(3), rows(d));
            }
            try (Dataset d = Datasets.openLocalOrUrl("s3://lake/images@v1", cache)) {
                assertEquals(sparkRows(1), rows(d));
            }
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> Datasets.openLocalOrUrl("s3://lake/images/*.parquet", cache)
                            .close());
            assertTrue(e.getMessage().contains("a Delta Lake table"), e.getMessage());
            // Deletion vectors, read from the store beside the data files (the checked-in fixture).
            Path vectors = Path.of(System.getProperty("user.dir"))
                    .resolveSibling("clients/python/tests/data/delta-deletion-vectors");
            upload(s3, vectors, "deleted/");
            try (Dataset d = Datasets.openLocalOrUrl("s3://lake/deleted", cache)) {
                assertEquals(18, d.size());
                assertEquals(sparkRows(vectors, 1), rows(d));
            }
        } finally {
            System.clearProperty(S3ObjectStore.ENDPOINT_PROPERTY);
        }
    }

    /**
     * Over plain HTTP, which lists nothing, the log's versions are found by HEADs from the last
     * checkpoint (or from version 0, for an earlier version), and the snapshots read as Spark reads them:
     * the latest, version 1 (before the checkpoint), and the deletion-vector fixture, its vectors by ranged GETs.
     */
    @Test
    void theSameSnapshotsOverHttpByHeadsAndRangedReads() throws Exception {
        Path vectors = Path.of(System.getProperty("user.dir"))
                .resolveSibling("clients/python/tests/data/delta-deletion-vectors");
        try (ShardServer http = new ShardServer(ShardServer.Versions.LAST_MODIFIED)) {
            serve(http, table, "/lake/images/");
            serve(http, vectors, "/lake/deleted/");
            UrlDatasetProvider.ShardCache cache = new UrlDatasetProvider.ShardCache(64L << 20, null);
            try (Dataset d = Datasets.openLocalOrUrl(http.url("/lake/images/"), cache)) {
                assertEquals(http.url("/lake/images") + "@v3", ((ShardDataset) d).snapshot());
                assertEquals(sparkRows(3), rows(d));
            }
            try (Dataset d = Datasets.openLocalOrUrl(http.url("/lake/images@v1"), cache)) {
                assertEquals(sparkRows(1), rows(d));
            }
            try (Dataset d = Datasets.openLocalOrUrl(http.url("/lake/deleted/"), cache)) {
                assertEquals(18, d.size());
                assertEquals(sparkRows(vectors, 1), rows(d));
            }
        }
    }

    /** Each file under {@code folder}: its path relative to it ('/'-separated) and its bytes. */
    static Map<String, byte[]> filesUnder(Path folder) throws Exception {
        Map<String, byte[]> out = new TreeMap<>();
        try (Stream<Path> files = Files.walk(folder)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                out.put(folder.relativize(f).toString().replace('\\', '/'), Files.readAllBytes(f));
            }
        }
        return out;
    }

    /** Every file under {@code folder} served at {@code prefix}. */
    static void serve(ShardServer http, Path folder, String prefix) throws Exception {
        filesUnder(folder).forEach((name, bytes) -> http.put(prefix + name, bytes));
    }

    /** Every file under {@code folder} into bucket {@code lake}, under {@code prefix}. */
    static void upload(TestS3Server s3, Path folder, String prefix) throws Exception {
        filesUnder(folder).forEach((name, bytes) -> s3.put("lake", prefix + name, bytes));
    }

    @Test
    void theFolderIsNeverReadLoose() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocal(table + "/*.parquet").close());
        assertTrue(e.getMessage().contains("a Delta Lake table"), e.getMessage());
        assertTrue(e.getMessage().contains(table.toString()), e.getMessage());
    }

    /** Opening {@code table} is refused in one sentence that says {@code why}. */
    static void assertRefused(Path table, String why) {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocal(table.toString()).close());
        assertTrue(e.getMessage().contains(why), e.getMessage());
    }

    /**
     * Rows that DELETEs marked in deletion vectors (the files kept, a bitmap of dead rows beside them)
     * are left out, and the rest read as Spark's own reader gives them, at every version: two parts
     * of many row groups each, a first DELETE, then a second whose vector replaces the first's.
     */
    @Test
    void rowsDeletedByDeletionVectorsAreLeftOutAsSparkReadsThem() throws Exception {
        Path dv = tmp.resolve("with-deletion-vectors");
        org.apache.hadoop.conf.Configuration hadoop = spark.sparkContext().hadoopConfiguration();
        String block = hadoop.get("parquet.block.size");
        hadoop.setInt("parquet.block.size", 16 << 10); // row groups of some 40 rows: a vector spans many
        try {
            spark.createDataFrame(rows(0, 400), SCHEMA)
                    .repartition(2)
                    .write()
                    .format("delta")
                    .option("delta.enableDeletionVectors", "true")
                    .save(dv.toString());
        } finally {
            if (block == null) {
                hadoop.unset("parquet.block.size");
            } else {
                hadoop.set("parquet.block.size", block);
            }
        }
        spark.sql("DELETE FROM delta.`" + dv + "` WHERE label = 3");
        spark.sql("DELETE FROM delta.`" + dv + "` WHERE label = 7 OR image.path LIKE 'img-1%'");
        try (Stream<Path> vectors = Files.list(dv)) {
            assertTrue(
                    vectors.anyMatch(p -> p.getFileName().toString().startsWith("deletion_vector_")),
                    "the DELETEs wrote deletion vectors, not new files");
        }
        TableSnapshot latest = LakehouseDatasets.snapshot(dv.toString(), TableColumns.DEFAULT);
        assertEquals(2, latest.files().size(), "the parts stay, each with its vector");
        assertTrue(latest.files().stream().allMatch(f -> f.deletedRows().length > 0));
        for (long v = 0; v <= 2; v++) {
            Map<String, Integer> spark = sparkRows(dv, v);
            assertTrue(spark.values().stream().allMatch(c -> c == 1));
            assertEquals(spark, stokeRows(dv + "@v" + v), "version " + v);
        }
        assertEquals(400 - 40 - 40 - 111 + 11 + 11, count(sparkRows(dv, 2)), "labels 3 and 7 and img-1*");
    }

    static int count(Map<String, Integer> rows) {
        return rows.values().stream().mapToInt(Integer::intValue).sum();
    }

    @Test
    void columnMappingIsRefusedNamingIt() {
        Path mapped = tmp.resolve("column-mapping");
        spark.createDataFrame(rows(0, 20), SCHEMA)
                .write()
                .format("delta")
                .option("delta.columnMapping.mode", "name")
                .save(mapped.toString());
        assertRefused(mapped, "column mapping (delta.columnMapping.mode=name)");
    }

    @Test
    void aPartitionColumnStokeReadsIsRefused() {
        Path partitioned = tmp.resolve("partitioned");
        spark.createDataFrame(rows(0, 20), SCHEMA)
                .write()
                .format("delta")
                .partitionBy("label")
                .save(partitioned.toString());
        assertRefused(partitioned, "partitioned by label");
    }
}
