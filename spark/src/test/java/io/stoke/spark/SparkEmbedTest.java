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
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
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
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
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
                TableColumns.DEFAULT);
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
                Dataset dataset = Datasets.open(data.toString(), ErrorPolicy.SKIP, w -> {})) {
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
                EmbeddingJob.run(loader, embedder, tables, rows, n -> {});
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
