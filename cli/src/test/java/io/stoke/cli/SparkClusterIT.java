package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stoke spark-embed} on a real Spark standalone cluster on 127.0.0.1 (a master and two
 * workers of one core, each executor its own JVM running target/stoke.jar), its driver a process
 * of its own started as a user would. Each run's tables must be, byte for byte, the tables
 * {@code stoke embed --format parquet} writes on one machine for the same shards (SparkEmbedTest,
 * in the spark module, reads such tables back with Spark's Parquet reader): so every sample is in
 * them exactly once, after an executor killed -9 mid-shard, with speculative copies of tasks, and
 * after a driver killed -9 mid-job and run again.
 */
class SparkClusterIT {
    static final Path MODEL = SparkCluster.ROOT.resolve("embed/models/tiny_cnn_f32.onnx");
    static final int SHARDS = 6;
    static final int PER_SHARD = 60;
    /**
     * How many times the others the last shard is: the straggler speculation copies. Spark takes
     * the median of the tasks done so far, and an executor's first task also pays for its JVM's
     * warm-up and the model's loading, so at 4 the straggler could end before the idle executor
     * was offered its copy (CI, once).
     */
    static final int STRAGGLER = 12;

    @TempDir
    static Path tmp;

    static SparkCluster cluster;
    static Path shards;
    static Path single;

    @BeforeAll
    static void start() throws Exception {
        shards = Files.createDirectories(tmp.resolve("shards"));
        for (int s = 0; s < SHARDS; s++) {
            shard(shards.resolve("part-" + s + ".tar"), s, s == SHARDS - 1 ? STRAGGLER * PER_SHARD : PER_SHARD);
        }
        single = tmp.resolve("single");
        Process embed = new ProcessBuilder(stoke(
                        List.of(SparkCluster.JAR.toString()),
                        "embed",
                        shards.toString(),
                        "--model",
                        MODEL.toString(),
                        "--output-name",
                        "embedding",
                        "--out",
                        single.toString(),
                        "--format",
                        "parquet",
                        "--batch-size",
                        "16",
                        "--on-error",
                        "skip"))
                .redirectErrorStream(true)
                .redirectOutput(tmp.resolve("single.log").toFile())
                .start();
        assertEquals(0, embed.waitFor(), Files.readString(tmp.resolve("single.log")));
        cluster = SparkCluster.start(tmp.resolve("cluster"), 2);
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** A shard of {@code n} photographs-sized JPEGs with labels, one of them not a JPEG at all. */
    static void shard(Path file, int shard, int n) throws IOException {
        try (OutputStream os = Files.newOutputStream(file);
                TarArchiveOutputStream tar = new TarArchiveOutputStream(os)) {
            for (int i = 0; i < n; i++) {
                String key = "s" + shard + "/" + i;
                byte[] image = shard == 1 && i == 7
                        ? "this is not a JPEG".getBytes(StandardCharsets.US_ASCII)
                        : TestImages.jpeg(300 + 7 * (i % 5), 240 + 5 * shard, 1000L * shard + i);
                TestTars.member(tar, key + ".jpg", image);
                TestTars.member(tar, key + ".cls", Integer.toString(i % 5).getBytes(StandardCharsets.US_ASCII));
            }
        }
    }

    /** java with Spark's and Stoke's options running io.stoke.cli.Main with {@code args}. */
    static List<String> stoke(List<String> classPath, String... args) {
        List<String> cmd = SparkCluster.java(classPath);
        cmd.add("io.stoke.cli.Main");
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Starts the driver: ./stoke spark-embed's command, against the cluster. */
    static Process driver(Path out, Path log, String... extra) throws IOException, InterruptedException {
        return driver(shards, out, log, extra);
    }

    /** {@link #driver(Path, Path, String...)} over {@code data}. */
    static Process driver(Path data, Path out, Path log, String... extra) throws IOException, InterruptedException {
        cluster.awaitIdle(Duration.ofSeconds(60));
        List<String> args = new ArrayList<>(List.of(
                "spark-embed",
                data.toString(),
                "--model",
                MODEL.toString(),
                "--output-name",
                "embedding",
                "--out",
                out.toString(),
                "--master",
                cluster.master(),
                "--batch-size",
                "16",
                "--conf",
                "spark.executor.memory=1g",
                "--conf",
                "spark.driver.host=127.0.0.1"));
        args.addAll(List.of(extra));
        ProcessBuilder pb = new ProcessBuilder(stoke(
                        List.of(
                                SparkCluster.SPARK_HOME.resolve("conf").toString(),
                                SparkCluster.SPARK_HOME.resolve("jars") + "/*",
                                SparkCluster.JAR.toString()),
                        args.toArray(String[]::new)))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile());
        SparkCluster.environment(pb.environment());
        return pb.start();
    }

    static JsonNode finish(Process driver, Path out, Path log) throws Exception {
        assertTrue(driver.waitFor(240, TimeUnit.SECONDS), "the driver did not finish");
        assertEquals(0, driver.exitValue(), Files.readString(log));
        JsonNode manifest =
                new ObjectMapper().readTree(out.resolve("_manifest.json").toFile());
        System.err.println(out.getFileName() + ": " + manifest);
        return manifest;
    }

    /**
     * OUT's tables are the single-machine tables, file for file and row for row: the same samples
     * in the same order with the same key, label and status, embeddings equal to float rounding
     * (ONNX Runtime's sums run on another number of threads).
     */
    static void assertSameTables(Path out) throws IOException {
        assertSameTables(single, SHARDS, out);
    }

    /** {@link #assertSameTables(Path)} against the {@code tables} tables in {@code expectedDir}. */
    static void assertSameTables(Path expectedDir, int tables, Path out) throws IOException {
        List<String> expected = parquet(expectedDir);
        assertEquals(tables, expected.size());
        assertEquals(expected, parquet(out));
        for (String name : expected) {
            List<ParquetRows> want = ParquetRows.read(expectedDir.resolve(name));
            List<ParquetRows> got = ParquetRows.read(out.resolve(name));
            assertEquals(want.size(), got.size(), name);
            for (int i = 0; i < want.size(); i++) {
                ParquetRows a = want.get(i);
                ParquetRows b = got.get(i);
                assertEquals(
                        List.of(a.shard(), a.key(), a.row(), a.label(), a.status()),
                        List.of(b.shard(), b.key(), b.row(), b.label(), b.status()),
                        name + " row " + i);
                assertEquals(i, b.row(), name + " row " + i);
                assertArrayEquals(a.embedding(), b.embedding(), 1e-4f, name + " row " + i);
            }
        }
    }

    static List<String> parquet(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".parquet"))
                    .sorted()
                    .toList();
        }
    }

    /** Each committed shard's executor and seconds, for a failure's message. */
    static String markers(Path out) throws IOException {
        try (Stream<Path> files = Files.list(out.resolve("_committed"))) {
            ObjectMapper json = new ObjectMapper();
            StringBuilder sb = new StringBuilder();
            for (Path f : files.sorted().toList()) {
                JsonNode n = json.readTree(f.toFile());
                sb.append(n.path("shard").asText())
                        .append(" executor ")
                        .append(n.path("executor").asText())
                        .append(' ')
                        .append(n.path("seconds").asDouble())
                        .append(" s; ");
            }
            return sb.toString();
        }
    }

    static void awaitFile(Path dir, String suffix, int count, Duration timeout) throws Exception {
        long until = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < until) {
            if (Files.isDirectory(dir)) {
                try (Stream<Path> files = Files.list(dir)) {
                    if (files.filter(p -> p.getFileName().toString().endsWith(suffix))
                                    .count()
                            >= count) {
                        return;
                    }
                }
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no " + count + " *" + suffix + " in " + dir + " after " + timeout);
    }

    @Test
    void tablesAreTheSingleMachineTables() throws Exception {
        Path out = tmp.resolve("plain");
        Path log = tmp.resolve("plain.log");
        JsonNode m = finish(driver(out, log), out, log);
        assertEquals(SHARDS, m.get("committed").asInt(), m.toString());
        assertEquals((SHARDS - 1 + STRAGGLER) * PER_SHARD, m.get("rows").asLong());
        assertEquals(1, m.get("failedRows").asLong());
        assertSameTables(out);
    }

    /**
     * Submitted as a user submits it: Spark's own SparkSubmit (what bin/spark-submit runs, which
     * Maven's jars carry without the script) with Stoke's jar as the application, in client mode.
     * The master and the jar come from spark-submit, not from the command's options.
     */
    @Test
    void spark_submitOfStokesJarWritesTheSameTables() throws Exception {
        Path out = tmp.resolve("submitted");
        Path log = tmp.resolve("submitted.log");
        List<String> cmd = SparkCluster.java(List.of(
                SparkCluster.SPARK_HOME.resolve("conf").toString(), SparkCluster.SPARK_HOME.resolve("jars") + "/*"));
        cmd.addAll(List.of(
                "org.apache.spark.deploy.SparkSubmit",
                "--master",
                cluster.master(),
                "--deploy-mode",
                "client",
                "--conf",
                "spark.driver.host=127.0.0.1",
                "--conf",
                "spark.executor.memory=1g",
                "--class",
                "io.stoke.cli.Main",
                SparkCluster.JAR.toString(),
                "spark-embed",
                shards.toString(),
                "--model",
                MODEL.toString(),
                "--output-name",
                "embedding",
                "--out",
                out.toString(),
                "--batch-size",
                "16"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        SparkCluster.environment(pb.environment());
        cluster.awaitIdle(Duration.ofSeconds(60));
        JsonNode m = finish(pb.start(), out, log);
        assertEquals(SHARDS, m.get("committed").asInt(), m.toString());
        assertTrue(Files.readString(log).contains("master " + cluster.master()), Files.readString(log));
        assertSameTables(out);
    }

    @Test
    void anExecutorKilledMidShardLosesAndRepeatsNothing() throws Exception {
        Path out = tmp.resolve("killed-executor");
        Path log = tmp.resolve("killed-executor.log");
        Process driver = driver(out, log);
        // A table being written: an executor is mid-shard.
        awaitFile(out.resolve("_attempts"), ".partial", 1, Duration.ofSeconds(120));
        List<ProcessHandle> executors = SparkCluster.executors();
        assertFalse(executors.isEmpty(), "no executor JVM found");
        executors.get(0).destroyForcibly();
        JsonNode m = finish(driver, out, log);
        assertEquals(SHARDS, m.get("committed").asInt(), m.toString());
        assertTrue(m.get("attempts").get("failed").asInt() >= 1, m.toString());
        assertSameTables(out);
    }

    @Test
    void speculativeCopiesCommitEachShardOnce() throws Exception {
        Path out = tmp.resolve("speculation");
        Path log = tmp.resolve("speculation.log");
        JsonNode m = finish(
                driver(
                        out,
                        log,
                        "--conf",
                        "spark.speculation=true",
                        "--conf",
                        "spark.speculation.multiplier=0.5",
                        "--conf",
                        "spark.speculation.quantile=0.25",
                        "--conf",
                        "spark.speculation.minTaskRuntime=100ms",
                        "--conf",
                        "spark.speculation.interval=50ms",
                        // Spark 3.4+ also judges a task by its rate of input records, which these
                        // tasks (one shard each, read by Stoke, not Spark) do not report.
                        "--conf",
                        "spark.speculation.efficiency.enabled=false"),
                out,
                log);
        assertEquals(SHARDS, m.get("committed").asInt(), m.toString());
        assertTrue(
                m.get("attempts").get("speculative").asInt() >= 1,
                "no speculative copy ran: " + m + "\nthe tasks that committed: " + markers(out));
        assertSameTables(out);
    }

    @Test
    void aDriverKilledMidJobThenRunAgainLosesAndRepeatsNothing() throws Exception {
        Path out = tmp.resolve("killed-driver");
        Path log = tmp.resolve("killed-driver.log");
        Process first = driver(out, log);
        awaitFile(out.resolve("_committed"), ".json", 2, Duration.ofSeconds(120));
        first.destroyForcibly().waitFor();
        assertFalse(Files.exists(out.resolve("_manifest.json")), "the killed driver wrote no manifest");
        Path again = tmp.resolve("killed-driver-again.log");
        JsonNode m = finish(driver(out, again), out, again);
        assertTrue(m.get("committedBefore").asInt() >= 2, m.toString());
        assertEquals(
                SHARDS, m.get("committed").asInt() + m.get("committedBefore").asInt(), m.toString());
        assertSameTables(out);
        // Run a third time: nothing left to do.
        Path third = tmp.resolve("killed-driver-third.log");
        JsonNode done = finish(driver(out, third), out, third);
        assertEquals(SHARDS, done.get("committedBefore").asInt(), done.toString());
        assertEquals(0, done.get("attempts").get("launched").asInt(), done.toString());
        assertSameTables(out);
    }

    /**
     * Parquet input on the cluster: two files DuckDB wrote in the Hub's layout (zstd and snappy
     * pages), read by the executors with stoke.jar's Parquet reader beside Spark's own parquet-java
     * and codecs on their class path; a task per file, whose tables are {@code stoke embed}'s.
     */
    @Test
    void parquetInputGivesTheSingleMachineTables() throws Exception {
        Path folder = TestImages.imageFolder(tmp.resolve("parquet-images"), 40, 4, 17);
        Path data = Files.createDirectories(tmp.resolve("parquet"));
        String rows = "SELECT {'bytes': content, 'path': substr(filename, "
                + (folder.toString().length() + 2)
                + ")} AS image, regexp_extract(filename, 'class(\\d+)', 1)::BIGINT AS label FROM read_blob('"
                + folder + "/*/*.jpg') ORDER BY filename";
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement st = c.createStatement()) {
            st.execute("COPY (" + rows + " LIMIT 25) TO '" + data.resolve("train-00000-of-00002.parquet")
                    + "' (FORMAT parquet, COMPRESSION zstd)");
            st.execute("COPY (" + rows + " OFFSET 25) TO '" + data.resolve("train-00001-of-00002.parquet")
                    + "' (FORMAT parquet, COMPRESSION snappy)");
        }
        Path expected = tmp.resolve("parquet-single");
        Path embedLog = tmp.resolve("parquet-single.log");
        Process embed = new ProcessBuilder(stoke(
                        List.of(SparkCluster.JAR.toString()),
                        "embed",
                        data.toString(),
                        "--model",
                        MODEL.toString(),
                        "--output-name",
                        "embedding",
                        "--out",
                        expected.toString(),
                        "--format",
                        "parquet",
                        "--batch-size",
                        "16"))
                .redirectErrorStream(true)
                .redirectOutput(embedLog.toFile())
                .start();
        assertEquals(0, embed.waitFor(), Files.readString(embedLog));
        Path out = tmp.resolve("parquet-out");
        Path log = tmp.resolve("parquet-out.log");
        JsonNode m = finish(driver(data, out, log), out, log);
        assertEquals(2, m.get("committed").asInt(), m.toString());
        assertEquals(40, m.get("rows").asLong(), m.toString());
        assertSameTables(expected, 2, out);
        assertEquals(
                List.of("train-00000-of-00002.parquet", "train-00001-of-00002.parquet"),
                parquet(out),
                "a table per input file, named after it");
    }
}
