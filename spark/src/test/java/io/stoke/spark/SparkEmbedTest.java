package io.stoke.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.embed.Embedder;
import io.stoke.embed.EmbeddingJob;
import io.stoke.embed.EmbeddingSink;
import io.stoke.embed.EmbeddingTables;
import io.stoke.embed.InferenceDevice;
import io.stoke.loader.Loader;
import io.stoke.loader.Workers;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job in Spark's local mode ({@code local[2,2]}: two task threads, two attempts per task), its
 * tables read back by Spark's own Parquet reader: the same rows as the single-machine job's
 * tables, every sample exactly once after failed first attempts and reruns, refusals of another
 * model or preprocessing, bad images as status rows and a garbage shard named in the manifest.
 * The standalone cluster (executors in their own JVMs, one killed) is SparkClusterIT's, in the cli.
 */
class SparkEmbedTest {
    static final Path MODEL = Path.of("../embed/models/tiny_cnn_f32.onnx");
    static final Path MODEL_U8 = Path.of("../embed/models/tiny_cnn_u8.onnx");
    static final int SHARDS = 4;
    static final int PER_SHARD = 9;

    @TempDir
    static Path tmp;

    static SparkSession spark;
    static Path shards;

    @BeforeAll
    static void start() throws IOException {
        shards = Files.createDirectories(tmp.resolve("shards"));
        for (int s = 0; s < SHARDS; s++) {
            TestTars.labelledShard(shards.resolve("train-" + s + ".tar"), s, PER_SHARD);
        }
        spark = SparkEmbed.session("local[2,2]");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
            spark = null;
        }
    }

    static TransformSpec eval(int resize) {
        return TransformSpec.defaults().withResize(resize, 224).withDctScaling(TransformSpec.DctScaling.NONE);
    }

    static SparkEmbed.Request request(String data, Path model, String out, int resize) {
        return request(data, model, out, resize, 1);
    }

    static SparkEmbed.Request request(String data, Path model, String out, int resize, int shardsPerTask) {
        return request(data, model, out, resize, shardsPerTask, null);
    }

    /** With {@code keyColumn} naming a Parquet input's key column (null: none). */
    static SparkEmbed.Request request(
            String data, Path model, String out, int resize, int shardsPerTask, String keyColumn) {
        return new SparkEmbed.Request(
                data,
                model,
                "embedding",
                eval(resize),
                out,
                4,
                Workers.fixed(1),
                3,
                1,
                InferenceDevice.CPU,
                64L << 20,
                shardsPerTask,
                new TableColumns(null, null, keyColumn),
                null);
    }

    /** {@link #run}, with every task's first attempt failing after its first batch (a partial file left behind). */
    static Manifest runFailingFirstAttempts(SparkEmbed.Request request) throws Exception {
        ShardEmbedding.attemptSink = (attempt, tables) -> attempt == 0 ? new FailAfterFirstBatch(tables) : tables;
        try {
            return run(request);
        } finally {
            ShardEmbedding.attemptSink = null;
        }
    }

    private record FailAfterFirstBatch(EmbeddingSink sink) implements EmbeddingSink {
        @Override
        public void writeRows(long first, int count, MemorySegment values) {
            sink.writeRows(first, count, values);
            throw new IllegalStateException("injected failure of a first attempt");
        }

        @Override
        public void skip(long row, String path, String reason) {
            sink.skip(row, path, reason);
        }
    }

    static Manifest run(SparkEmbed.Request request) throws Exception {
        List<String> said = new ArrayList<>();
        Manifest m = SparkEmbed.run(spark, request, said::add);
        said.forEach(line -> System.err.println("spark-embed: " + line));
        return m;
    }

    /** The table's rows, sorted by (shard, row), each "shard key row label status" and its embedding. */
    static List<Row> rows(Path out) {
        return spark.read().parquet(out.toString()).orderBy("shard", "row").collectAsList();
    }

    static void assertOncePerSample(List<Row> rows, int expected) {
        Set<String> seen = new HashSet<>();
        for (Row r : rows) {
            assertTrue(
                    seen.add(r.getString(0) + "#" + r.getLong(2)),
                    "sample twice: " + r.getString(0) + " " + r.getLong(2));
        }
        assertEquals(expected, rows.size());
    }

    /** What `stoke embed --format parquet` writes for the same shards: one loader over all of them. */
    static Path singleMachine(Path data, Path out) throws Exception {
        try (Embedder embedder = Embedder.open(MODEL, 1, InferenceDevice.CPU, "embedding");
                Dataset dataset = Datasets.openLocalChecked(data.toString(), ErrorPolicy.SKIP, w -> {})) {
            TransformSpec transform = embedder.contract().transform(eval(256));
            int[] rows = new int[dataset.size()];
            Arrays.setAll(rows, i -> i);
            try (EmbeddingTables tables = EmbeddingTables.create(
                            out, dataset, rows, embedder.contract().dimension(), false);
                    Loader loader = Loader.builder(dataset)
                            .transform(transform)
                            .batchSize(5)
                            .workers(2)
                            .onError(ErrorPolicy.SKIP)
                            .build()) {
                EmbeddingJob.run(loader, embedder, tables, rows, EmbeddingJob.processCpuNanos(), n -> {});
                tables.commit();
            }
        }
        return out;
    }

    @Test
    void rowsAreTheSingleMachineJobsRows() throws Exception {
        Path out = tmp.resolve("same");
        Manifest m = run(request(shards.toString(), MODEL, out.toString(), 256));
        assertTrue(m.complete(), m.toString());
        assertEquals(SHARDS, m.committed());
        assertEquals(SHARDS * PER_SHARD, m.rows());
        List<Row> cluster = rows(out);
        List<Row> single = rows(singleMachine(shards, tmp.resolve("single")));
        assertOncePerSample(cluster, SHARDS * PER_SHARD);
        assertEquals(single.size(), cluster.size());
        for (int i = 0; i < single.size(); i++) {
            Row a = single.get(i);
            Row b = cluster.get(i);
            for (int c = 0; c < 5; c++) {
                assertEquals(a.get(c), b.get(c), "column " + c + " of row " + i);
            }
            assertEquals("ok", b.getString(4));
            assertArrayEquals(floats(a), floats(b), 1e-5f, "embedding of " + b.getString(0) + " " + b.getLong(2));
        }
        // The labels are the shards' .cls members: (shard * perShard + i) % 4.
        Row third = cluster.get(PER_SHARD + 2); // train-1.tar, sample 2
        assertEquals("train-1.tar", third.getString(0));
        assertEquals("k/1-2", third.getString(1));
        assertEquals((PER_SHARD + 2) % 4, third.getInt(3));
        assertFalse(Files.exists(out.resolve("_attempts").resolve("train-0.parquet")));
        assertEquals(SHARDS, onlyFiles(out, ".parquet").size(), "one table per shard in OUT");
    }

    @Test
    void failedFirstAttemptsLeaveEverySampleOnce() throws Exception {
        Path out = tmp.resolve("retried");
        Manifest m = runFailingFirstAttempts(request(shards.toString(), MODEL, out.toString(), 256));
        assertTrue(m.complete(), m.toString());
        assertEquals(SHARDS, m.committed());
        assertOncePerSample(rows(out), SHARDS * PER_SHARD);
        assertEquals(List.of(), onlyFiles(out.resolve("_attempts"), ".parquet"), "no attempt's file is left");
        assertEquals(2 * SHARDS, m.attempts().launched(), m.toString());
        // Three shards a task: two tasks, each failing once; the retry of the first finds
        // nothing of its own committed (the failure came in its first shard's first batch).
        Path grouped = tmp.resolve("grouped");
        Manifest g = runFailingFirstAttempts(request(shards.toString(), MODEL, grouped.toString(), 256, 3));
        assertTrue(g.complete(), g.toString());
        assertEquals(4, g.attempts().launched(), g.toString());
        assertOncePerSample(rows(grouped), SHARDS * PER_SHARD);
    }

    @Test
    void aRerunSkipsCommittedShardsAndRedoesLostOnes() throws Exception {
        Path out = tmp.resolve("rerun");
        run(request(shards.toString(), MODEL, out.toString(), 256));
        List<Row> first = rows(out);
        Manifest again = run(request(shards.toString(), MODEL, out.toString(), 256));
        assertEquals(0, again.committed());
        assertEquals(SHARDS, again.committedBefore());
        assertEquals(SHARDS * PER_SHARD, again.rows());
        // A commit cut between its marker and its table (an executor lost there): the marker is
        // removed and the shard embedded again.
        Files.delete(out.resolve("train-2.parquet"));
        Manifest repaired = run(request(shards.toString(), MODEL, out.toString(), 256));
        assertEquals(1, repaired.committed());
        assertEquals(SHARDS - 1, repaired.committedBefore());
        List<Row> after = rows(out);
        assertOncePerSample(after, SHARDS * PER_SHARD);
        for (int i = 0; i < first.size(); i++) {
            assertArrayEquals(floats(first.get(i)), floats(after.get(i)), 1e-5f);
        }
    }

    @Test
    void aRerunRefusesAnotherModelOrPreprocessing() throws Exception {
        Path out = tmp.resolve("refuse");
        run(request(shards.toString(), MODEL, out.toString(), 256));
        IllegalArgumentException model = assertThrows(
                IllegalArgumentException.class, () -> run(request(shards.toString(), MODEL_U8, out.toString(), 256)));
        assertTrue(model.getMessage().contains("another model"), model.getMessage());
        IllegalArgumentException pixels = assertThrows(
                IllegalArgumentException.class, () -> run(request(shards.toString(), MODEL, out.toString(), 240)));
        assertTrue(pixels.getMessage().contains("other preprocessing"), pixels.getMessage());
        assertTrue(pixels.getMessage().contains("Resize(256)"), pixels.getMessage());
    }

    @Test
    void badImagesAreStatusRowsAndAGarbageShardIsNamed() throws Exception {
        Path data = Files.createDirectories(tmp.resolve("mixed"));
        TestTars.labelledShard(data.resolve("a-good.tar"), 0, PER_SHARD);
        try (OutputStream os = Files.newOutputStream(data.resolve("b-bad-images.tar"));
                TarArchiveOutputStream tar = new TarArchiveOutputStream(os)) {
            TestTars.member(tar, "x/0.jpg", TestImages.jpeg(50, 40, 1));
            TestTars.member(tar, "x/0.cls", "1".getBytes(StandardCharsets.US_ASCII));
            TestTars.member(tar, "x/1.jpg", "not a jpeg at all".getBytes(StandardCharsets.US_ASCII));
            TestTars.member(tar, "x/1.cls", "2".getBytes(StandardCharsets.US_ASCII));
        }
        byte[] garbage = new byte[30_000];
        new Random(3).nextBytes(garbage);
        Files.write(data.resolve("c-garbage.tar"), garbage);
        Path out = tmp.resolve("mixed-out");
        Manifest m = run(request(data.toString(), MODEL, out.toString(), 256));
        assertFalse(m.complete());
        assertEquals(2, m.committed());
        assertEquals(1, m.failed().size(), m.toString());
        assertEquals("c-garbage.tar", m.failed().get(0).shard());
        assertTrue(
                m.failed().get(0).reason().contains("c-garbage.tar"),
                m.failed().get(0).reason());
        assertEquals(1, m.failedRows());
        List<Row> rows = rows(out);
        assertOncePerSample(rows, PER_SHARD + 2);
        Row bad = rows.stream()
                .filter(r -> r.getString(1).equals("x/1"))
                .findFirst()
                .orElseThrow();
        assertTrue(bad.getString(4).startsWith("NOT_IMAGE: "), bad.getString(4));
        for (float v : floats(bad)) {
            assertEquals(0f, v);
        }
        assertEquals(2, bad.getInt(3));
        assertTrue(Files.readString(out.resolve("_manifest.json")).contains("c-garbage.tar"));
    }

    static final int IMAGES = 20;
    static final int PER_GROUP = 3;

    /**
     * {@link #IMAGES} images of a folder as Spark writes a table in the Hub's layout (an {@code image}
     * struct of {@code bytes} and {@code path}, an int64 {@code label}, and an {@code id}: the image's
     * place in the folder), with its own DataFrameWriter: two partitions, so two part files of
     * snappy pages, each in row groups of {@link #PER_GROUP} rows.
     */
    static Path sparkWrittenHubTable(Path folder, Path out) throws IOException {
        List<Row> rows = new ArrayList<>();
        try (FileDataset images = ImageFolder.scan(folder)) {
            for (int i = 0; i < images.size(); i++) {
                Path file = images.resolve(i);
                rows.add(RowFactory.create(
                        RowFactory.create(
                                Files.readAllBytes(file),
                                folder.relativize(file).toString()),
                        (long) images.label(i),
                        Integer.toString(i)));
            }
        }
        StructType schema = new StructType()
                .add(
                        "image",
                        new StructType().add("bytes", DataTypes.BinaryType).add("path", DataTypes.StringType))
                .add("label", DataTypes.LongType)
                .add("id", DataTypes.StringType);
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        spark.createDataFrame(sc.parallelize(rows, 2), schema)
                .write()
                .option("parquet.block.row.count.limit", Integer.toString(PER_GROUP))
                .parquet(out.toString());
        return out;
    }

    /** The rows of a folder's single-machine table, by the image's place in the folder. */
    static List<Row> folderRows(Path folder, Path out) throws Exception {
        return rows(singleMachine(folder, out));
    }

    /** Every row of a table over {@link #sparkWrittenHubTable}'s parts, checked against the folder's. */
    static void assertPartsTables(Path out, Path parts, List<Row> folder, boolean keyed) throws IOException {
        List<String> inputs = onlyFiles(parts, ".parquet");
        assertEquals(2, inputs.size(), inputs.toString());
        assertEquals(inputs, onlyFiles(out, ".parquet"), "one table per input file, named after it");
        List<Row> rows = rows(out);
        assertOncePerSample(rows, IMAGES);
        int sample = 0;
        for (String input : inputs) {
            // Read alone, each table holds its input file's rows in order; spark-embed's shard column names it.
            List<Row> table = spark.read()
                    .parquet(out.resolve(input).toString())
                    .orderBy("row")
                    .collectAsList();
            assertFalse(table.isEmpty(), input);
            for (int r = 0; r < table.size(); r++, sample++) {
                Row got = table.get(r);
                Row want = folder.get(sample);
                String where = input + " row " + r;
                assertEquals(input, got.getString(0), where);
                assertEquals(keyed ? Integer.toString(sample) : Integer.toString(r), got.getString(1), where);
                assertEquals(r, got.getLong(2), where);
                assertEquals(want.getInt(3), got.getInt(3), where);
                assertEquals("ok", got.getString(4), where);
                assertArrayEquals(floats(want), floats(got), 1e-5f, where + " (" + want.getString(1) + ")");
            }
        }
        assertEquals(IMAGES, sample);
    }

    /**
     * A Delta Lake table (the Python client's fixture, written by delta-spark) at version 1: a task
     * per file of that snapshot and every one of its 18 rows once, the later version's file and the
     * files its DELETE removed, all in the folder, left alone.
     */
    @Test
    void aDeltaLakeTablesSnapshotIsEmbeddedAndNothingElseOfItsFolder() throws Exception {
        assertSnapshotEmbedded("delta-images", "@v1", "@v2");
    }

    /**
     * An Apache Iceberg table (the Python client's fixture, written by Iceberg's Java library) at its
     * second snapshot, alike, read where the table was copied to; the latest at planning named by its
     * snapshot id.
     */
    @Test
    void anIcebergTablesSnapshotIsEmbeddedAndNothingElseOfItsFolder() throws Exception {
        assertSnapshotEmbedded("iceberg-images", "@v6115693495836072155", "@v7613922452491425802");
    }

    /**
     * The Python client's table fixture {@code name} (24 rows, then 18 after a delete of label 3, then
     * 24 after an append of label 4) embedded at its second snapshot ({@code second}): its 18 rows
     * once each, labels 0 to 2; and at the latest at planning, which the manifest names ({@code latest}).
     */
    void assertSnapshotEmbedded(String name, String second, String latest) throws Exception {
        Path table = Path.of(System.getProperty("user.dir")).resolveSibling("clients/python/tests/data/" + name);
        Path out = tmp.resolve(name + "-out");
        Manifest m = run(request(table + second, MODEL, out.toString(), 256));
        assertTrue(m.complete(), m.toString());
        assertEquals(18, m.rows(), m.toString());
        List<Row> rows = rows(out);
        assertOncePerSample(rows, 18);
        Set<String> labels = new HashSet<>();
        for (Row r : rows) {
            labels.add(String.valueOf(r.getAs("label").toString()));
        }
        assertEquals(Set.of("0", "1", "2"), labels, "the second snapshot deleted label 3; the third appended label 4");
        assertEquals(table + second, m.data());
        // The latest snapshot at planning, named in the manifest by its version, not as the table alone.
        Manifest last = run(
                request(table.toString(), MODEL, tmp.resolve(name + "-latest").toString(), 256));
        assertEquals(24, last.rows(), last.toString());
        assertEquals(table + latest, last.data());
    }

    /**
     * A snapshot whose rows deletion vectors delete is refused before any task runs, naming the
     * vectors and {@code stoke embed}: a task reads its data file alone, which would give them.
     */
    @Test
    void aDeltaLakeSnapshotWithDeletionVectorsIsRefusedBeforeAnyTask() {
        Path table = Path.of(System.getProperty("user.dir"))
                .resolveSibling("clients/python/tests/data/delta-deletion-vectors");
        Path out = tmp.resolve("delta-dv-out");
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> run(request(table.toString(), MODEL, out.toString(), 256)));
        assertTrue(
                e.getMessage().contains("deletes rows of 2 of its data files by deletion vectors")
                        && e.getMessage().contains("stoke embed"),
                e.getMessage());
        assertFalse(Files.exists(out.resolve("_manifest.json")), "nothing was committed");
    }

    /**
     * A Spark-written Hub table: a task per part file (its row groups together), one table per
     * part named after it, every row once with its row and key, and the embeddings of the same
     * images read from their folder; with a key column named and every first attempt failing, each
     * file is still committed once, and a rerun redoes none.
     */
    @Test
    void sparkWrittenParquetGivesATablePerInputFileEveryRowOnce() throws Exception {
        Path folder = TestImages.imageFolder(tmp.resolve("hub-folder"), IMAGES, 3, 21);
        Path parts = sparkWrittenHubTable(folder, tmp.resolve("hub-table"));
        try (Dataset d = Datasets.openLocal(parts.toString())) {
            int groups = ((ShardDataset) d).shards().shardCount();
            assertTrue(groups > 2, "several row groups per part file: " + groups);
        }
        List<Row> expected = folderRows(folder, tmp.resolve("hub-folder-single"));
        assertEquals(IMAGES, expected.size());

        Path out = tmp.resolve("hub-out");
        Manifest m = run(request(parts.toString(), MODEL, out.toString(), 256));
        assertTrue(m.complete(), m.toString());
        assertEquals(2, m.committed(), m.toString());
        assertEquals(IMAGES, m.rows());
        assertPartsTables(out, parts, expected, false);

        Path keyed = tmp.resolve("hub-out-keyed");
        SparkEmbed.Request byId = request(parts.toString(), MODEL, keyed.toString(), 256, 1, "id");
        Manifest retried = runFailingFirstAttempts(byId);
        assertTrue(retried.complete(), retried.toString());
        assertEquals(2, retried.committed(), retried.toString());
        assertEquals(4, retried.attempts().launched(), retried.toString());
        assertEquals(List.of(), onlyFiles(keyed.resolve("_attempts"), ".parquet"), "no attempt's file is left");
        assertPartsTables(keyed, parts, expected, true);
        Manifest again = run(byId);
        assertEquals(0, again.committed());
        assertEquals(2, again.committedBefore());
        assertPartsTables(keyed, parts, expected, true);
    }

    /**
     * Planning reads a Parquet file's footer and nothing else: with every page of a copy turned to
     * garbage, its rows are still counted, and its task is the one to fail, naming the file and
     * the row groups it could not read.
     */
    @Test
    void planningAParquetInputReadsOnlyFooters() throws Exception {
        Path folder = TestImages.imageFolder(tmp.resolve("footer-folder"), 8, 2, 5);
        Path parts = sparkWrittenHubTable(folder, tmp.resolve("footer-table"));
        Path damaged = Files.createDirectories(tmp.resolve("footer-damaged"));
        int rows = 0;
        for (String name : onlyFiles(parts, ".parquet")) {
            byte[] bytes = Files.readAllBytes(parts.resolve(name));
            int footer = ByteBuffer.wrap(bytes, bytes.length - 8, 4)
                    .order(ByteOrder.LITTLE_ENDIAN)
                    .getInt();
            // Everything between the leading magic and the footer: the column chunks' pages.
            Arrays.fill(bytes, 4, bytes.length - 8 - footer, (byte) 0x5A);
            Files.write(damaged.resolve(name), bytes);
        }
        List<ShardTask> tasks = SparkEmbed.list(request(damaged.toString(), MODEL, "unused", 256), line -> {})
                .tasks();
        assertEquals(
                onlyFiles(parts, ".parquet"),
                tasks.stream().map(ShardTask::table).toList());
        for (ShardTask t : tasks) {
            assertEquals(t.shard(), Path.of(t.spec()).getFileName().toString());
            rows += t.samples();
        }
        assertEquals(8, rows);
        Manifest m =
                run(request(damaged.toString(), MODEL, tmp.resolve("footer-out").toString(), 256));
        assertFalse(m.complete());
        assertEquals(2, m.failed().size(), m.toString());
        for (Manifest.Failure f : m.failed()) {
            assertTrue(f.reason().contains(f.shard()) && f.reason().contains("cannot read row group"), f.toString());
        }
    }

    static float[] floats(Row r) {
        List<Object> values = r.getList(5);
        float[] f = new float[values.size()];
        for (int i = 0; i < f.length; i++) {
            f[i] = (Float) values.get(i);
        }
        return f;
    }

    static List<String> onlyFiles(Path dir, String suffix) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(suffix))
                    .sorted()
                    .toList();
        }
    }
}
