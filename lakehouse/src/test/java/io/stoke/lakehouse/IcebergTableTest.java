package io.stoke.lakehouse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteOptions;
import io.stoke.remote.S3ObjectStore;
import io.stoke.remote.ShardServer;
import io.stoke.remote.TestS3Server;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.inmemory.InMemoryCatalog;
import org.apache.iceberg.inmemory.InMemoryFileIO;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.mapping.MappingUtil;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.types.Types;
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
 * Apache Iceberg tables whose metadata, manifest lists and manifests Iceberg's own Java library
 * wrote (a Hadoop table on local disk, and a catalog's table at {@code s3://}), over Parquet data
 * files Spark wrote, read by Stoke as their snapshots: each snapshot's rows exactly once, after a
 * copy-on-write delete and a compaction left replaced files in the folder; older snapshots by time
 * travel; rows that position delete files and deletion vectors delete left out; from s3proxy by
 * listings and ranged reads alone, and over HTTP; refused, naming the feature, where Stoke would read
 * other rows than the table's. The expected rows are the generator's
 * own, by each snapshot's construction.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
@SuppressWarnings("try") // TestAwsProperties is held for its settings alone
class IcebergTableTest {
    static final Schema SCHEMA = new Schema(
            Types.NestedField.optional(
                    1,
                    "image",
                    Types.StructType.of(
                            Types.NestedField.optional(3, "bytes", Types.BinaryType.get()),
                            Types.NestedField.optional(4, "path", Types.StringType.get()))),
            Types.NestedField.optional(2, "label", Types.LongType.get()));

    static final StructType SPARK_SCHEMA = new StructType()
            .add("image", new StructType().add("bytes", DataTypes.BinaryType).add("path", DataTypes.StringType))
            .add("label", DataTypes.LongType);

    @TempDir
    static Path tmp;

    static SparkSession spark;
    /** The Hadoop table: snapshots 1 (600 rows), 2 (a delete of label 3), 3 (an append), 4 (a compaction). */
    static Path table;

    static final List<Long> snapshots = new ArrayList<>();
    static final List<Map<String, Integer>> expected = new ArrayList<>();

    /** The catalog's table at s3://lake/native: its files, by their URLs, for the S3 and HTTP tests. */
    static final Map<String, byte[]> nativeFiles = new TreeMap<>();

    static String nativeMetadata;
    static long nativeFirst;

    @BeforeAll
    static void writeTables() throws Exception {
        spark = DeltaSpark.session("stoke-iceberg-test", 2);
        table = tmp.resolve("images");
        Files.createDirectories(table.resolve("data"));
        HadoopTables tables = new HadoopTables(new Configuration());
        Table t = tables.create(SCHEMA, PartitionSpec.unpartitioned(), properties(), table.toString());
        // Snapshot 1: three parts.
        DataFile a = part(t, "a", 0, 200, i -> true);
        DataFile b = part(t, "b", 200, 200, i -> true);
        DataFile c = part(t, "c", 400, 200, i -> true);
        t.newAppend().appendFile(a).appendFile(b).appendFile(c).commit();
        record(t, 0, 600, i -> true, 0, 0);
        // Snapshot 2: a copy-on-write delete of label 3, as Spark's DELETE makes it: each part rewritten.
        IntPredicate kept = i -> i % 10 != 3;
        DataFile a2 = part(t, "a2", 0, 200, kept);
        DataFile b2 = part(t, "b2", 200, 200, kept);
        DataFile c2 = part(t, "c2", 400, 200, kept);
        t.newOverwrite()
                .deleteFile(a)
                .deleteFile(b)
                .deleteFile(c)
                .addFile(a2)
                .addFile(b2)
                .addFile(c2)
                .commit();
        record(t, 0, 600, kept, 0, 0);
        // Snapshot 3: an append; snapshot 4: a compaction of every part into one.
        DataFile d = part(t, "d", 600, 90, i -> true);
        t.newAppend().appendFile(d).commit();
        record(t, 0, 600, kept, 600, 90);
        DataFile all = part(t, "all", 0, 690, i -> i >= 600 || kept.test(i));
        t.newRewrite()
                .deleteFile(a2)
                .deleteFile(b2)
                .deleteFile(c2)
                .deleteFile(d)
                .addFile(all)
                .commit();
        record(t, 0, 600, kept, 600, 90);
        writeNativeTable();
    }

    /** Iceberg's own name mapping, so that Iceberg's readers match the Spark-written files' columns by name. */
    static Map<String, String> properties() {
        return Map.of(
                TableProperties.DEFAULT_NAME_MAPPING,
                NameMappingParser.toJson(MappingUtil.create(SCHEMA)),
                TableProperties.FORMAT_VERSION,
                "2");
    }

    /** A data file that Spark writes of rows {@code first..first+n} that {@code keep}, at the table's data/NAME.parquet. */
    static DataFile part(Table t, String name, int first, int n, IntPredicate keep) throws Exception {
        Path file = sparkParquet(name, first, n, keep);
        Path at = table.resolve("data").resolve(name + ".parquet");
        Files.move(file, at);
        return DataFiles.builder(t.spec())
                .withPath(at.toUri().toString())
                .withFileSizeInBytes(Files.size(at))
                .withRecordCount(count(first, n, keep))
                .withFormat(FileFormat.PARQUET)
                .build();
    }

    /** One Parquet file, as Spark writes it, of rows {@code first..first+n} that {@code keep}. */
    static Path sparkParquet(String name, int first, int n, IntPredicate keep) throws Exception {
        Path out = tmp.resolve("spark").resolve(name);
        List<Row> rows = new ArrayList<>();
        for (Row r : DeltaTableTest.rows(first, n)) {
            if (keep.test(rowIndex(r))) {
                rows.add(r);
            }
        }
        spark.createDataFrame(rows, SPARK_SCHEMA).coalesce(1).write().parquet(out.toString());
        try (Stream<Path> files = Files.list(out)) {
            return files.filter(p -> p.getFileName().toString().endsWith(".parquet"))
                    .findFirst()
                    .orElseThrow();
        }
    }

    static int rowIndex(Row r) {
        String path = r.getStruct(0).getString(1); // img-<i>.jpg
        return Integer.parseInt(path.substring(4, path.length() - 4));
    }

    static long count(int first, int n, IntPredicate keep) {
        return java.util.stream.IntStream.range(first, first + n).filter(keep).count();
    }

    /** The snapshot just committed, and its rows: {@code first..first+n} that {@code keep}, then {@code more} more from {@code from}. */
    static void record(Table t, int first, int n, IntPredicate keep, int from, int more) throws Exception {
        snapshots.add(t.currentSnapshot().snapshotId());
        Map<String, Integer> rows = new TreeMap<>();
        List<Row> all = new ArrayList<>(DeltaTableTest.rows(first, n));
        all.addAll(DeltaTableTest.rows(from, more));
        for (Row r : all) {
            int i = rowIndex(r);
            if (i >= from && i < from + more || keep.test(i)) {
                rows.merge(DeltaTableTest.digest((byte[]) r.getStruct(0).get(0)) + " " + r.getLong(1), 1, Integer::sum);
            }
        }
        expected.add(rows);
        Thread.sleep(5); // each snapshot committed at its own millisecond, for time travel
    }

    /**
     * A table as a catalog writes it, at {@code s3://lake/native}: {@code 00000-<uuid>.metadata.json}
     * and no version hint, its paths s3:// URLs. Iceberg's in-memory catalog writes its files into
     * memory, and the test takes them from there; the data files are snapshot 1's and 2's parts.
     */
    static void writeNativeTable() throws Exception {
        InMemoryCatalog catalog = new InMemoryCatalog();
        catalog.initialize("lake", Map.of("warehouse", "s3://lake"));
        catalog.createNamespace(Namespace.of("db"));
        Table t = catalog.createTable(
                TableIdentifier.of("db", "native"),
                SCHEMA,
                PartitionSpec.unpartitioned(),
                "s3://lake/native",
                properties());
        List<DataFile> first = new ArrayList<>();
        for (String name : new String[] {"a", "b", "c"}) {
            first.add(nativePart(t, name, 200));
        }
        var append = t.newAppend();
        first.forEach(append::appendFile);
        append.commit();
        nativeFirst = t.currentSnapshot().snapshotId();
        var overwrite = t.newOverwrite();
        first.forEach(overwrite::deleteFile);
        for (int p = 0; p < 3; p++) {
            overwrite.addFile(nativePart(t, "abc".charAt(p) + "2", count(200 * p, 200, i -> i % 10 != 3)));
        }
        overwrite.commit();
        TableMetadata current =
                ((org.apache.iceberg.HasTableOperations) t).operations().current();
        nativeMetadata = current.metadataFileLocation();
        InMemoryFileIO io = new InMemoryFileIO();
        List<String> locations = new ArrayList<>();
        locations.add(current.metadataFileLocation());
        current.previousFiles().forEach(e -> locations.add(e.file()));
        for (Snapshot s : t.snapshots()) {
            locations.add(s.manifestListLocation());
            for (ManifestFile m : s.allManifests(io)) {
                locations.add(m.path());
            }
        }
        for (String location : locations) {
            try (var in = io.newInputFile(location).newStream()) {
                nativeFiles.put(location, in.readAllBytes());
            }
        }
    }

    /** The Hadoop table's data/NAME.parquet, of {@code rows} rows, as the catalog's table's data/NAME.parquet. */
    static DataFile nativePart(Table t, String name, long rows) throws Exception {
        String url = "s3://lake/native/data/" + name + ".parquet";
        byte[] bytes = Files.readAllBytes(table.resolve("data/" + name + ".parquet"));
        nativeFiles.put(url, bytes);
        return DataFiles.builder(t.spec())
                .withPath(url)
                .withFileSizeInBytes(bytes.length)
                .withRecordCount(rows)
                .withFormat(FileFormat.PARQUET)
                .build();
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    static Map<String, Integer> stokeRows(String spec) throws Exception {
        return DeltaTableTest.stokeRows(spec);
    }

    @Test
    void eachSnapshotIsItsOwnRowsOnce() throws Exception {
        for (int s = 0; s < snapshots.size(); s++) {
            assertEquals(expected.get(s), stokeRows(table + "@v" + snapshots.get(s)), "snapshot " + (s + 1));
        }
        // The latest, by the folder (its version hint) and by the metadata file itself.
        assertEquals(expected.get(3), stokeRows(table.toString()));
        Path metadata;
        try (Stream<Path> files = Files.list(table.resolve("metadata"))) {
            metadata = files.filter(p -> p.getFileName().toString().matches("v\\d+\\.metadata\\.json"))
                    .max((x, y) -> Integer.compare(version(x), version(y)))
                    .orElseThrow();
        }
        assertEquals(expected.get(3), stokeRows(metadata.toString()));
        assertEquals(expected.get(0), stokeRows(metadata + "@v" + snapshots.get(0)));
        // Pinned by its snapshot id, and said so.
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(table.toString())) {
            assertEquals(table + "@v" + snapshots.get(3), d.snapshot());
        }
        // The folder holds every part ever written; the snapshot reads one.
        try (Stream<Path> files = Files.list(table.resolve("data"))) {
            assertEquals(8, files.filter(p -> p.toString().endsWith(".parquet")).count());
        }
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocal(table + "/data/*.parquet").close());
        assertTrue(e.getMessage().contains("an Apache Iceberg table"), e.getMessage());
    }

    static int version(Path metadata) {
        String name = metadata.getFileName().toString();
        return Integer.parseInt(name.substring(1, name.indexOf('.')));
    }

    @Test
    void timeTravelByTimeGivesTheSnapshotCommittedThen() throws Exception {
        Table t = new HadoopTables(new Configuration()).load(table.toString());
        for (int s = 0; s < snapshots.size(); s++) {
            Instant at = Instant.ofEpochMilli(t.snapshot(snapshots.get(s)).timestampMillis());
            assertEquals(expected.get(s), stokeRows(table + "@" + at), "as of snapshot " + (s + 1));
        }
        Instant before = Instant.ofEpochMilli(t.snapshot(snapshots.get(0)).timestampMillis() - 1);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> stokeRows(table + "@" + before));
        assertTrue(e.getMessage().contains("no snapshot committed at or before"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> stokeRows(table + "@v12345"));
        assertTrue(e.getMessage().contains("has no snapshot 12345"), e.getMessage());
    }

    /** Rows {@code first..first+n} but {@code deleted}, counted as {@link #record} counts them. */
    static Map<String, Integer> rowsBut(int first, int n, Set<Integer> deleted) throws Exception {
        Map<String, Integer> rows = new TreeMap<>();
        for (Row r : DeltaTableTest.rows(first, n)) {
            if (!deleted.contains(rowIndex(r))) {
                rows.merge(DeltaTableTest.digest((byte[]) r.getStruct(0).get(0)) + " " + r.getLong(1), 1, Integer::sum);
            }
        }
        return rows;
    }

    /**
     * A table at {@code at} of format version {@code format} over copies of the Hadoop table's parts a
     * (rows 0..199) and b (200..399), in its own data/.
     */
    static Table tableOverAB(Path at, int format) throws Exception {
        Files.createDirectories(at.resolve("data"));
        Map<String, String> properties = new java.util.HashMap<>(properties());
        properties.put(TableProperties.FORMAT_VERSION, String.valueOf(format));
        Table t = new HadoopTables(new Configuration())
                .create(SCHEMA, PartitionSpec.unpartitioned(), properties, at.toString());
        var append = t.newAppend();
        for (String name : List.of("a", "b")) {
            Path f = Files.copy(table.resolve("data/" + name + ".parquet"), at.resolve("data/" + name + ".parquet"));
            append.appendFile(DataFiles.builder(t.spec())
                    .withPath(f.toUri().toString())
                    .withFileSizeInBytes(Files.size(f))
                    .withRecordCount(200)
                    .withFormat(FileFormat.PARQUET)
                    .build());
        }
        append.commit();
        return t;
    }

    /** One Parquet file Spark writes of {@code rows} in {@code schema}, under the test's folder. */
    static Path sparkFile(String name, List<Row> rows, StructType schema) throws Exception {
        Path dir = tmp.resolve("spark").resolve(name);
        spark.createDataFrame(rows, schema).coalesce(1).write().parquet(dir.toString());
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.toString().endsWith(".parquet"))
                    .findFirst()
                    .orElseThrow();
        }
    }

    /**
     * Merge-on-read deletes (format 2): position delete files, as Spark's DELETE writes them with
     * {@code write.delete.mode=merge-on-read}, one deleting rows of both parts; their rows are left
     * out, each once, and the snapshot before them is read whole. An equality delete is refused,
     * naming it; so is a renamed column Stoke reads.
     */
    @Test
    void positionDeletesAreLeftOutAndEqualityDeletesRefused() throws Exception {
        Path deletes = tmp.resolve("position-deletes");
        Table t = tableOverAB(deletes, 2);
        long clean = t.currentSnapshot().snapshotId();
        String a = deletes.resolve("data/a.parquet").toUri().toString();
        String b = deletes.resolve("data/b.parquet").toUri().toString();
        StructType positions =
                new StructType().add("file_path", DataTypes.StringType).add("pos", DataTypes.LongType);
        Path first = sparkFile(
                "positions-1",
                List.of(RowFactory.create(a, 0L), RowFactory.create(a, 5L), RowFactory.create(b, 199L)),
                positions);
        Path second = sparkFile("positions-2", List.of(RowFactory.create(a, 5L), RowFactory.create(a, 17L)), positions);
        var delta = t.newRowDelta();
        for (Path f : List.of(first, second)) {
            delta.addDeletes(FileMetadata.deleteFileBuilder(t.spec())
                    .ofPositionDeletes()
                    .withPath(f.toUri().toString())
                    .withFileSizeInBytes(Files.size(f))
                    .withRecordCount(f == first ? 3 : 2)
                    .withFormat(FileFormat.PARQUET)
                    .build());
        }
        delta.commit();
        Map<String, Integer> expected = rowsBut(0, 400, Set.of(0, 5, 17, 399));
        assertEquals(expected, stokeRows(deletes.toString()));
        assertEquals(396, DeltaTableTest.count(expected));
        assertEquals(400, DeltaTableTest.count(stokeRows(deletes + "@v" + clean)));
        // A position delete file holding more rows than its manifest says: refused before they are held.
        Path tooMany = tmp.resolve("position-deletes-too-many");
        Table understated = tableOverAB(tooMany, 2);
        String a2 = tooMany.resolve("data/a.parquet").toUri().toString();
        Path three = sparkFile(
                "positions-3",
                List.of(RowFactory.create(a2, 1L), RowFactory.create(a2, 2L), RowFactory.create(a2, 3L)),
                positions);
        understated
                .newRowDelta()
                .addDeletes(FileMetadata.deleteFileBuilder(understated.spec())
                        .ofPositionDeletes()
                        .withPath(three.toUri().toString())
                        .withFileSizeInBytes(Files.size(three))
                        .withRecordCount(1)
                        .withFormat(FileFormat.PARQUET)
                        .build())
                .commit();
        IllegalArgumentException understatedError =
                assertThrows(IllegalArgumentException.class, () -> stokeRows(tooMany.toString()));
        assertTrue(
                understatedError.getMessage().contains("holds more rows than its manifest's 1"),
                understatedError.getMessage());
        // An equality delete of label 3: refused, naming it.
        Path equality = sparkFile(
                "equality", List.of(RowFactory.create(3L)), new StructType().add("label", DataTypes.LongType));
        t.newRowDelta()
                .addDeletes(FileMetadata.deleteFileBuilder(t.spec())
                        .ofEqualityDeletes(2)
                        .withPath(equality.toUri().toString())
                        .withFileSizeInBytes(Files.size(equality))
                        .withRecordCount(1)
                        .withFormat(FileFormat.PARQUET)
                        .build())
                .commit();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> stokeRows(deletes.toString()));
        assertTrue(e.getMessage().contains("has equality deletes"), e.getMessage());
        assertTrue(e.getMessage().contains("rewrite_data_files"), e.getMessage());
        // A renamed column Stoke reads is refused, at every snapshot: its older files hold it under
        // its old name, its newer under the new.
        t.updateSchema().renameColumn("label", "class").commit();
        for (TableColumns columns : List.of(TableColumns.DEFAULT, new TableColumns(null, "class", null))) {
            e = assertThrows(
                    IllegalArgumentException.class, () -> LakehouseDatasets.snapshot(deletes + "@v" + clean, columns));
            assertTrue(e.getMessage().contains("is named"), e.getMessage());
            assertTrue(e.getMessage().contains("(a rename)"), e.getMessage());
        }
    }

    /**
     * Format 3's deletion vectors, as Iceberg's own DV writer writes them (a Puffin file of bitmaps):
     * their rows are left out, read by a ranged read of each blob, locally and from S3.
     */
    @Test
    void deletionVectorsAreLeftOut(@TempDir Path home) throws Exception {
        Path at = tmp.resolve("deletion-vectors");
        Table t = tableOverAB(at, 3);
        String a = at.resolve("data/a.parquet").toUri().toString();
        String b = at.resolve("data/b.parquet").toUri().toString();
        BaseDVFileWriter writer = new BaseDVFileWriter(
                OutputFileFactory.builderFor(t, 1, 1).format(FileFormat.PUFFIN).build(), path -> null);
        try (writer) {
            for (long pos : new long[] {3, 4, 150}) {
                writer.delete(a, pos, t.spec(), null);
            }
            writer.delete(b, 0, t.spec(), null);
        }
        var delta = t.newRowDelta();
        writer.result().deleteFiles().forEach(delta::addDeletes);
        delta.commit();
        Map<String, Integer> expected = rowsBut(0, 400, Set.of(3, 4, 150, 200));
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(at.toString())) {
            assertEquals(expected, DeltaTableTest.rows(d));
            assertEquals(2, d.filesWithDeletedRows());
        }
        try (TestS3Server.TestAwsProperties properties = new TestS3Server.TestAwsProperties(home);
                TestS3Server s3 = new TestS3Server()) {
            System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
            s3.createBucket("lake", false);
            DeltaTableTest.upload(s3, at, "vectors/");
            UrlDatasetProvider.ShardCache cache = new UrlDatasetProvider.ShardCache(64L << 20, null);
            try (Dataset d = Datasets.openLocalOrUrl("s3://lake/vectors/", cache)) {
                assertEquals(expected, DeltaTableTest.rows(d));
            }
        } finally {
            System.clearProperty(S3ObjectStore.ENDPOINT_PROPERTY);
        }
    }

    /**
     * From s3proxy: the catalog's table (s3:// paths, no version hint: its highest-numbered metadata
     * file, by a listing), by listings and ranged reads alone; and the Hadoop table uploaded under
     * another prefix, its file: paths read under where it was opened.
     */
    @Test
    void fromS3ByListingsAndRangedReadsAlone(@TempDir Path home) throws Exception {
        try (TestS3Server.TestAwsProperties properties = new TestS3Server.TestAwsProperties(home);
                TestS3Server s3 = new TestS3Server()) {
            System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
            s3.createBucket("lake", false);
            nativeFiles.forEach((url, bytes) -> s3.put("lake", url.substring("s3://lake/".length()), bytes));
            RecordingStore recorded =
                    new RecordingStore(ObjectStore.forUrl("s3://lake/native/", RemoteOptions.defaults()));
            try (ShardDataset d =
                    LakehouseDatasets.open("s3://lake/native", TableColumns.DEFAULT, 64L << 20, recorded)) {
                assertEquals(expected.get(1), DeltaTableTest.rows(d));
            }
            assertEquals(0, recorded.calls("read-whole"), recorded.calls.toString());
            assertEquals(0, recorded.calls("write"), recorded.calls.toString());
            assertTrue(recorded.calls("read-range") > 0, recorded.calls.toString());
            UrlDatasetProvider.ShardCache cache = new UrlDatasetProvider.ShardCache(64L << 20, null);
            try (Dataset d = Datasets.openLocalOrUrl(nativeMetadata + "@v" + nativeFirst, cache)) {
                assertEquals(expected.get(0), DeltaTableTest.rows(d));
            }
            DeltaTableTest.upload(s3, table, "moved/");
            try (Dataset d = Datasets.openLocalOrUrl("s3://lake/moved/", cache)) {
                assertEquals(expected.get(3), DeltaTableTest.rows(d));
                assertEquals("s3://lake/moved@v" + snapshots.get(3), ((ShardDataset) d).snapshot());
            }
            try (Dataset d = Datasets.openLocalOrUrl("s3://lake/moved@v" + snapshots.get(1), cache)) {
                assertEquals(expected.get(1), DeltaTableTest.rows(d));
            }
        } finally {
            System.clearProperty(S3ObjectStore.ENDPOINT_PROPERTY);
        }
    }

    /**
     * Over HTTP, which lists nothing: the Hadoop table by its version hint, the catalog's by its
     * metadata file's URL (its folder alone is refused, saying so); paths under where each was written
     * read under where it is served.
     */
    @Test
    void overHttpByItsVersionHintOrItsMetadataFile() throws Exception {
        try (ShardServer http = new ShardServer(ShardServer.Versions.LAST_MODIFIED)) {
            DeltaTableTest.serve(http, table, "/lake/images/");
            nativeFiles.forEach((url, bytes) -> http.put("/lake/" + url.substring("s3://lake/".length()), bytes));
            UrlDatasetProvider.ShardCache cache = new UrlDatasetProvider.ShardCache(64L << 20, null);
            try (Dataset d = Datasets.openLocalOrUrl(http.url("/lake/images/"), cache)) {
                assertEquals(expected.get(3), DeltaTableTest.rows(d));
            }
            try (Dataset d = Datasets.openLocalOrUrl(http.url("/lake/images@v" + snapshots.get(2)), cache)) {
                assertEquals(expected.get(2), DeltaTableTest.rows(d));
            }
            String metadata = http.url("/lake/" + nativeMetadata.substring("s3://lake/".length()));
            try (Dataset d = Datasets.openLocalOrUrl(metadata, cache)) {
                assertEquals(expected.get(1), DeltaTableTest.rows(d));
            }
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> LakehouseDatasets.snapshot(http.url("/lake/native@v" + nativeFirst), TableColumns.DEFAULT));
            assertTrue(e.getMessage().contains("name its metadata file"), e.getMessage());
        }
    }
}
