package io.stoke.spark;

import ai.onnxruntime.OrtException;
import io.stoke.embed.Embedder;
import io.stoke.embed.EmbeddingTable;
import io.stoke.embed.InferenceDevice;
import io.stoke.embed.InputFile;
import io.stoke.lakehouse.OutputTable;
import io.stoke.loader.Workers;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code stoke spark-embed}'s driver: lists the input files (tar shards, through their shard catalog when
 * there is one: nothing of a shard is read here; Parquet files, through their footers: no page is
 * read here), skips those an earlier run into the same output committed, and runs one Spark task
 * per input file ({@link ShardEmbedding}); then writes the manifest.
 */
public final class SparkEmbed {
    /**
     * One job.
     *
     * @param data             the shards (a folder, pattern, shard catalog file or URL prefix) or Parquet
     *                         files (a file, folder or pattern)
     * @param model            the ONNX model, a local file (shipped to the executors by Spark)
     * @param outputName       the model's output to keep, when it has several
     * @param eval             the evaluation transform's settings, fitted to the model's input
     * @param out              a local or shared folder, or an {@code s3://} prefix
     * @param batchSize        samples per batch
     * @param workers          decoding threads per task: fixed, or auto at most its count and the
     *                         task's cores; null: auto, at most the task's cores ({@code spark.task.cpus})
     * @param slots            ring slots per task
     * @param intraOpThreads   ONNX Runtime's threads per operator; 0: the task's cores
     * @param device           the CPU, or CUDA: the GPU Spark gave the task, else this device
     * @param shardCacheBytes  memory for a remote shard while its task reads it
     * @param shardsPerTask    consecutive input files a task embeds one after the other (small
     *                         shards: fewer tasks, each committing its files one by one)
     * @param columns          a Parquet input's image, label and key columns
     *                         ({@link TableColumns#DEFAULT}: found by their defaults)
     * @param outputTable      the output made a Delta Lake or Iceberg table, every committed shard's
     *                         table appended at the job's end ({@link OutputTable}); null: Parquet files only
     */
    public record Request(
            String data,
            Path model,
            String outputName,
            TransformSpec eval,
            String out,
            int batchSize,
            Workers workers,
            int slots,
            int intraOpThreads,
            InferenceDevice device,
            long shardCacheBytes,
            int shardsPerTask,
            TableColumns columns,
            OutputTable.Format outputTable) {
        public Request {
            if (shardsPerTask < 1) {
                throw new IllegalArgumentException("--shards-per-task must be at least 1, not " + shardsPerTask);
            }
            Objects.requireNonNull(columns, "columns (TableColumns.DEFAULT: found by their defaults)");
        }

        /** This request, its output made {@code table} (null: Parquet files only). */
        public Request withOutputTable(OutputTable.Format table) {
            return new Request(
                    data,
                    model,
                    outputName,
                    eval,
                    out,
                    batchSize,
                    workers,
                    slots,
                    intraOpThreads,
                    device,
                    shardCacheBytes,
                    shardsPerTask,
                    columns,
                    table);
        }
    }

    private SparkEmbed() {}

    /**
     * The session a job runs in: {@code master} when given; else the one spark-submit named
     * ({@code spark.master}); else {@code local[*]}, this machine's cores. A cluster's executors
     * are given the jar this class came from (Stoke's, with ONNX Runtime) unless spark-submit gave
     * them one, and the JVM options Stoke's loader needs.
     */
    public static SparkSession session(String master) {
        return session(master, Map.of());
    }

    /** {@link #session(String)} with Spark settings ({@code spark.speculation=true}, say) on top. */
    public static SparkSession session(String master, Map<String, String> conf) {
        SparkSession.Builder builder = SparkSession.builder().appName("stoke spark-embed");
        settings(master, conf, System.getProperties(), ownJar()).forEach(builder::config);
        return builder.getOrCreate();
    }

    /**
     * The settings {@link #session(String, Map)} gives its session: {@code conf}, then the master,
     * Stoke's jar for a cluster's executors and the JVM options they need, each where neither
     * {@code conf} nor spark-submit (its settings are {@code system} properties) gave it; options
     * given are kept, Stoke's added after them.
     */
    static Map<String, String> settings(String master, Map<String, String> conf, Properties system, Path ownJar) {
        Map<String, String> settings = new LinkedHashMap<>(conf);
        Function<String, String> given = key -> conf.getOrDefault(key, system.getProperty(key));
        String chosen = master != null ? master : Objects.requireNonNullElse(given.apply("spark.master"), "local[*]");
        settings.put("spark.master", chosen);
        if (!chosen.startsWith("local") && given.apply("spark.jars") == null && ownJar != null) {
            settings.put("spark.jars", ownJar.toString());
        }
        String options = Objects.requireNonNullElse(given.apply("spark.executor.extraJavaOptions"), "");
        if (!options.contains("jdk.internal.misc")) {
            settings.put("spark.executor.extraJavaOptions", (options + " " + EXECUTOR_JAVA_OPTIONS).strip());
        }
        return settings;
    }

    /** What an executor's JVM needs for Stoke's loader (Agrona's unsafe access; FFM downcalls), beside Spark's own. */
    static final String EXECUTOR_JAVA_OPTIONS =
            "--add-exports java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED";

    /** The jar this class was loaded from, or null when it came from a folder (a build's classes). */
    private static Path ownJar() {
        try {
            Path p = Path.of(SparkEmbed.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .toURI());
            return Files.isRegularFile(p) ? p : null;
        } catch (URISyntaxException | RuntimeException e) {
            return null;
        }
    }

    /**
     * Runs {@code request} in a session of its own ({@link #session(String, Map)}), stopped after:
     * what {@code stoke spark-embed} does.
     */
    public static Manifest run(String master, Map<String, String> conf, Request request, Consumer<String> say)
            throws IOException, OrtException {
        SparkSession spark = session(master, conf);
        try {
            say.accept("Spark " + spark.version() + ", master "
                    + spark.sparkContext().master() + ", " + maxAttempts(spark) + " attempt(s) per task");
            return run(spark, request, say);
        } finally {
            spark.stop();
        }
    }

    /**
     * What a run would do, decided before any task: every shard (from the listing or the shard catalog),
     * those still to embed, and what the markers of an earlier run into the same output hold.
     */
    record Plan(
            String data,
            List<ShardTask> all,
            List<ShardTask> todo,
            int before,
            TransformSpec transform,
            String modelSha256,
            String preprocessing,
            String preprocessingSha256,
            double seconds) {}

    /**
     * Plans {@code request} without running it: what {@code stoke spark-embed --dry-run} prints.
     * Needs no Spark: the shards are listed, the output's markers read, the model hashed.
     */
    public static String dryRun(Request request, Consumer<String> say) throws IOException, OrtException {
        long start = System.nanoTime();
        try (TableStore store = TableStore.of(request.out())) {
            Plan plan = plan(request, store, start, say);
            long samples = plan.todo().stream().mapToLong(ShardTask::samples).sum();
            return String.format(
                    Locale.ROOT,
                    "would embed %d shards (%d samples) of %d; %d committed by an earlier run; planned in %.3f s",
                    plan.todo().size(),
                    samples,
                    plan.all().size(),
                    plan.before(),
                    plan.seconds());
        }
    }

    private static Plan plan(Request request, TableStore store, long start, Consumer<String> say)
            throws IOException, OrtException {
        String modelSha = sha256(request.model());
        TransformSpec transform;
        try (Embedder probe = Embedder.open(request.model(), 1, InferenceDevice.CPU, request.outputName())) {
            transform = probe.contract().transform(request.eval());
        }
        String preprocessing = describe(transform);
        String preprocessingSha = sha256(preprocessing);
        Listing listing = list(request, say);
        List<ShardTask> all = listing.tasks();
        String caveat = store.atMostOnceCaveat();
        if (caveat != null) {
            say.accept(caveat);
        }
        Set<String> committed = store.committed();
        OutputTable.Format found = OutputTable.at(store.location(), store.objectStore());
        if (found != null && found != request.outputTable()) {
            // The table's log names the shards committed when it was appended to: a run that did
            // not append would leave its own out. (Loose files of an earlier run are appended when
            // this one makes the output a table.)
            throw new IllegalArgumentException(store.where() + " is " + found.withArticle() + " table (an earlier run's"
                    + " --output-table " + found.name().toLowerCase(Locale.ROOT) + "): "
                    + (request.outputTable() == null
                            ? "pass --output-table " + found.name().toLowerCase(Locale.ROOT)
                            : "not made " + request.outputTable().withArticle() + " table too")
                    + ", or write to another output");
        }
        if (!committed.isEmpty()) {
            CommitMarker earlier = store.marker(committed.iterator().next());
            if (!earlier.modelSha256().equals(modelSha)) {
                throw new IllegalArgumentException(store.where() + " holds tables of another model (SHA-256 "
                        + earlier.modelSha256() + ", this one " + modelSha + "): write to another output");
            }
            if (!earlier.preprocessingSha256().equals(preprocessingSha)) {
                throw new IllegalArgumentException(store.where() + " holds tables of other preprocessing ("
                        + earlier.preprocessing() + "; this run: " + preprocessing + "): write to another output");
            }
        }
        Set<String> tables = store.tables();
        List<ShardTask> todo = new ArrayList<>();
        int before = 0;
        for (ShardTask t : all) {
            boolean done = committed.contains(t.table()) && (tables.contains(t.table()) || store.repair(t.table()));
            if (done) {
                before++;
            } else {
                todo.add(t);
            }
        }
        return new Plan(
                listing.snapshot() != null ? listing.snapshot() : request.data(),
                all,
                todo,
                before,
                transform,
                modelSha,
                preprocessing,
                preprocessingSha,
                (System.nanoTime() - start) / 1e9);
    }

    /** Runs {@code request} on {@code spark}; {@code say} hears what the driver does, a line at a time. */
    public static Manifest run(SparkSession spark, Request request, Consumer<String> say)
            throws IOException, OrtException {
        long start = System.nanoTime();
        try (TableStore store = TableStore.of(request.out())) {
            Plan plan = plan(request, store, start, say);
            say.accept(String.format(
                    Locale.ROOT,
                    "%d shards in %s (planned in %.2f s): %d to embed, %d committed by an earlier run",
                    plan.all().size(),
                    Urls.redact(request.data()),
                    plan.seconds(),
                    plan.todo().size(),
                    plan.before()));
            TaskAttempts attempts = new TaskAttempts();
            spark.sparkContext().addSparkListener(attempts);
            try {
                List<ShardResult> results = plan.todo().isEmpty() ? List.of() : runTasks(spark, request, plan);
                // Listeners hear of tasks on Spark's event thread, after the job returns.
                try {
                    spark.sparkContext().listenerBus().waitUntilEmpty(10_000);
                } catch (TimeoutException e) {
                    say.accept("note: Spark's events did not drain in 10 s: the manifest's attempt counts may miss"
                            + " the last ones");
                }
                return finish(store, request, plan, results, attempts.snapshot(), start, say);
            } finally {
                spark.sparkContext().removeSparkListener(attempts);
            }
        }
    }

    /**
     * The input files a run plans a task each, and the table snapshot they are ({@code TABLE@vN}: the
     * manifest records it; null for any other input).
     */
    record Listing(List<ShardTask> tasks, String snapshot) {}

    /**
     * The input files, a task each: tar shards from the shard catalog when there is one (nothing of a shard
     * is fetched) or their headers; Parquet files from their footers (no page is read); a lakehouse
     * table's snapshot's data files. What opening found (damage, no shard catalog over remote shards) is
     * said through {@code say}.
     */
    static Listing list(Request request, Consumer<String> say) {
        Dataset dataset = Datasets.openLocalOrUrl(
                request.data(), new UrlDatasetProvider.ShardCache(request.shardCacheBytes(), null), request.columns());
        try (Dataset checked = Datasets.checked(
                dataset,
                request.data(),
                ErrorPolicy.SKIP,
                message -> say.accept(message.replace(
                        "WARNING: skipping what is past the damage: ",
                        "WARNING: a damaged shard (its task will fail, and the manifest name it): ")))) {
            if (!(checked instanceof ShardDataset)) {
                throw new IllegalArgumentException(
                        Urls.redact(request.data()) + " is neither .tar shards nor Parquet files:"
                                + " spark-embed runs a task per input file (`stoke pack` writes a folder of images as shards)");
            }
            if (dataset instanceof ShardDataset table && table.filesWithDeletedRows() > 0) {
                // Each task opens its data file alone, which would give the rows the deletes delete.
                throw new IllegalArgumentException(Urls.redact(table.snapshot()) + " deletes rows of "
                        + table.filesWithDeletedRows()
                        + " of its data files by deletion vectors (Delta Lake) or row-level deletes"
                        + " (Iceberg), and spark-embed's tasks read each data file alone: not embedded;"
                        + " rewrite the files without them (Delta Lake: REORG TABLE ... APPLY (PURGE);"
                        + " Iceberg: CALL system.rewrite_data_files), or embed it with `stoke embed`,"
                        + " which leaves the rows out");
            }
            List<ShardTask> tasks = new ArrayList<>();
            for (InputFile f : InputFile.of(checked)) {
                tasks.add(new ShardTask(f.path(), f.shard(), f.table(), f.samples()));
            }
            return new Listing(tasks, dataset instanceof ShardDataset table ? table.snapshot() : null);
        }
    }

    private static List<ShardResult> runTasks(SparkSession spark, Request request, Plan plan) {
        List<ShardTask> todo = plan.todo();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        String name = "/" + request.model().getFileName();
        if (CollectionConverters.asJava(sc.sc().listFiles()).stream().noneMatch(f -> f.endsWith(name))) {
            // Once per session: Spark ships a name once (tasks check the bytes' hash, ModelCache).
            sc.addFile(request.model().toAbsolutePath().toString());
        }
        EmbedSettings settings = new EmbedSettings(
                request.model().getFileName().toString(),
                plan.modelSha256(),
                request.outputName(),
                plan.transform(),
                plan.preprocessing(),
                request.out(),
                request.batchSize(),
                request.workers(),
                request.slots(),
                request.intraOpThreads(),
                request.device(),
                request.shardCacheBytes(),
                request.columns(),
                maxAttempts(spark));
        sc.setJobDescription("stoke spark-embed: " + todo.size() + " shards of " + Urls.redact(request.data()));
        int tasks = (todo.size() + request.shardsPerTask() - 1) / request.shardsPerTask();
        return sc.parallelize(todo, tasks)
                .map(task -> ShardEmbedding.run(task, settings))
                .collect();
    }

    private static Manifest finish(
            TableStore store,
            Request request,
            Plan plan,
            List<ShardResult> results,
            Manifest.Attempts attempts,
            long start,
            Consumer<String> say) {
        List<ShardTask> all = plan.all();
        List<ShardTask> todo = plan.todo();
        // A shard is in the table when its marker is: which attempt's result Spark kept (with
        // speculation, perhaps one that lost the race to commit) does not matter.
        Set<String> committedNow = store.committed();
        Set<String> tables = store.tables();
        List<Manifest.Failure> failures = new ArrayList<>();
        for (ShardTask t : todo) {
            // A commit cut between its marker and its table (the executor lost right there).
            if (committedNow.contains(t.table()) && !tables.contains(t.table()) && !store.repair(t.table())) {
                committedNow.remove(t.table());
                failures.add(new Manifest.Failure(
                        t.shard(), "the attempt that committed it was lost before its table was in place: run again"));
            }
        }
        long rows = 0;
        for (ShardTask t : all) {
            if (committedNow.contains(t.table())) {
                rows += t.samples();
            }
        }
        Map<String, ShardResult> byShard = new HashMap<>();
        for (ShardResult r : results) {
            byShard.put(r.shard(), r);
        }
        int committed = 0;
        int lost = 0;
        long failedRows = 0;
        for (ShardTask t : todo) {
            ShardResult r = byShard.get(t.shard());
            if (committedNow.contains(t.table())) {
                committed++;
                failedRows += r == null ? 0 : r.failed();
                lost += r != null && r.outcome() == ShardResult.Outcome.LOST_RACE ? 1 : 0;
            } else if (failures.stream().noneMatch(f -> f.shard().equals(t.shard()))) {
                failures.add(new Manifest.Failure(
                        t.shard(), r == null || r.reason() == null ? "no attempt committed its table" : r.reason()));
            }
        }
        String table = null;
        if (request.outputTable() != null && committed + plan.before() > 0) {
            List<OutputTable.DataFile> files = new ArrayList<>();
            for (ShardTask t : all) {
                if (committedNow.contains(t.table())) {
                    files.add(new OutputTable.DataFile(t.table(), t.samples()));
                }
            }
            quietCheckpointWarning();
            OutputTable.Appended appended = OutputTable.append(
                    request.outputTable(),
                    store.location(),
                    EmbeddingTable.SCHEMA,
                    files,
                    store::size,
                    store.objectStore());
            table = appended.describe();
            say.accept(store.where() + ": " + table);
        }
        Manifest manifest = new Manifest(
                Urls.redact(plan.data()), // stored: never a presigned URL's signature
                all.size(),
                rows,
                failedRows,
                committed,
                plan.before(),
                lost,
                failures,
                attempts,
                plan.modelSha256(),
                plan.preprocessingSha256(),
                plan.preprocessing(),
                table,
                plan.seconds(),
                (System.nanoTime() - start) / 1e9);
        store.writeManifest(manifest.toJson());
        for (Manifest.Failure f : failures) {
            say.accept("FAILED " + f.shard() + ": " + f.reason());
        }
        return manifest;
    }

    /**
     * Kernel warns that a log has no checkpoint each time it reads one, which every log Stoke appends
     * to is (no checkpoint is written): a normal state, not said. Through Spark's own logging
     * (log4j 2); a driver with another leaves the warning as it is.
     */
    private static void quietCheckpointWarning() {
        try {
            org.apache.logging.log4j.core.config.Configurator.setLevel(
                    "io.delta.kernel.internal.snapshot.SnapshotManager", org.apache.logging.log4j.Level.ERROR);
        } catch (LinkageError e) {
            // no log4j-core on this driver's class path: the warning prints, nothing else changes
        }
    }

    /** Spark's attempts per task: {@code local[N, F]}'s F (1 in {@code local[N]}), else {@code spark.task.maxFailures}. */
    static int maxAttempts(SparkSession spark) {
        String master = spark.sparkContext().master();
        Matcher local =
                Pattern.compile("local\\[\\s*(\\d+|\\*)\\s*,\\s*(\\d+)\\s*]").matcher(master);
        if (local.matches()) {
            return Integer.parseInt(local.group(2));
        }
        if (master.startsWith("local")) {
            return 1;
        }
        return spark.sparkContext().getConf().getInt("spark.task.maxFailures", 4);
    }

    /** The pixels a transform gives, in words: what the preprocessing hash covers. */
    static String describe(TransformSpec t) {
        return String.format(
                Locale.ROOT,
                "Resize(%d) CenterCrop(%d) %s mean=%s std=%s dct-scaling=%s",
                t.resize(),
                t.crop(),
                t.output(),
                Arrays.toString(t.mean()),
                Arrays.toString(t.std()),
                t.dctScaling());
    }

    static String sha256(Path file) throws IOException {
        MessageDigest digest = digest();
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                digest.update(buffer, 0, n);
            }
        }
        return HexFormat.of().formatHex(digest.digest());
    }

    static String sha256(String text) {
        return HexFormat.of().formatHex(digest().digest(text.getBytes(StandardCharsets.UTF_8)));
    }

    private static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new UncheckedIOException(new IOException(e));
        }
    }
}
