package io.stoke.spark;

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
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.apache.spark.SparkEnv;
import org.apache.spark.SparkFiles;
import org.apache.spark.TaskContext;
import org.apache.spark.resource.ResourceInformation;
import scala.Option;

/**
 * One task: one input file (a tar shard, or a Parquet file, all its row groups) through Stoke's
 * loader (its threads are the task's cores) into the executor's ONNX Runtime session, rows
 * streamed into the attempt's own Parquet file, which is then committed ({@link TableStore#commit}).
 * Decoded pixels stay in the loader's ring; only embeddings leave the task, in its table.
 */
final class ShardEmbedding {
    private ShardEmbedding() {}

    /**
     * Embeds {@code task}'s shard. A failure is thrown (Spark retries the task) on every attempt
     * but the last, which reports it instead: a shard that cannot be embedded is named in the
     * manifest, and the job goes on with the others.
     */
    static ShardResult run(ShardTask task, EmbedSettings settings) {
        TaskContext context = TaskContext.get();
        int attempt = context.attemptNumber();
        String executor = SparkEnv.get().executorId();
        long start = System.nanoTime();
        try {
            return embed(task, settings, context, executor, start);
        } catch (Exception | Error e) {
            if (attempt + 1 < settings.maxAttempts()) {
                throw new IllegalStateException(task.shard() + ": " + describe(e), e);
            }
            return new ShardResult(
                    task.shard(),
                    ShardResult.Outcome.FAILED,
                    0,
                    0,
                    describe(e),
                    attempt,
                    executor,
                    System.nanoTime() - start);
        }
    }

    private static ShardResult embed(
            ShardTask task, EmbedSettings settings, TaskContext context, String executor, long start) throws Exception {
        try (TableStore store = TableStore.of(settings.out())) {
            if (store.isCommitted(task.table())) {
                // A retry of a task of several shards, or a copy that started late: another attempt
                // committed this shard already; its table stands and nothing is done again.
                return new ShardResult(
                        task.shard(),
                        ShardResult.Outcome.LOST_RACE,
                        0,
                        0,
                        null,
                        context.attemptNumber(),
                        executor,
                        System.nanoTime() - start);
            }
            return embed(task, settings, context, executor, start, store);
        }
    }

    private static ShardResult embed(
            ShardTask task, EmbedSettings settings, TaskContext context, String executor, long start, TableStore store)
            throws Exception {
        int attempt = context.attemptNumber();
        long attemptId = context.taskAttemptId();
        int cores = Math.max(1, context.cpus());
        int threads = settings.intraOpThreads() > 0 ? settings.intraOpThreads() : cores;
        InferenceDevice device = device(settings, context);
        String key = ModelCache.key(settings.modelSha256(), threads, device, settings.outputName());
        Path model = Path.of(SparkFiles.get(settings.modelFile()));
        try (Dataset dataset = open(task.spec(), settings.shardCacheBytes(), settings.columns())) {
            if (dataset.size() != task.samples()) {
                throw new IllegalStateException(task.spec() + " holds " + dataset.size()
                        + " samples; the listing the job was planned from says " + task.samples()
                        + " (the file changed since the job was planned"
                        + (Datasets.isParquet(task.spec()) ? ")" : ": catalogue it again with `stoke catalog`)"));
            }
            Embedder embedder =
                    ModelCache.borrow(key, model, settings.modelSha256(), threads, device, settings.outputName());
            try {
                int[] rows = new int[dataset.size()];
                for (int i = 0; i < rows.length; i++) {
                    rows[i] = i;
                }
                long dimension = embedder.contract().dimension();
                EmbeddingJob.Figures figures;
                Path file;
                long cpuMark = EmbeddingJob.processCpuNanos();
                try (EmbeddingTables tables = EmbeddingTables.into(
                                store.attemptFolder(attemptId),
                                dataset,
                                rows,
                                dimension,
                                name -> name.substring(0, name.length() - ".parquet".length()) + ".attempt-" + attemptId
                                        + ".parquet");
                        Loader loader = Loader.builder(dataset)
                                .transform(settings.transform())
                                .batchSize(settings.batchSize())
                                .workers(workers(settings.workers(), cores))
                                .slots(settings.slots())
                                .onError(ErrorPolicy.SKIP)
                                .build()) {
                    AttemptSink wrap = attemptSink;
                    EmbeddingSink sink = wrap == null ? tables : wrap.sink(attempt, tables);
                    figures = EmbeddingJob.run(loader, embedder, sink, rows, cpuMark, images -> {});
                    tables.commit();
                    file = tables.written().get(0);
                }
                CommitMarker marker = new CommitMarker(
                        task.shard(),
                        task.table(),
                        store.attemptName(file),
                        figures.images(),
                        figures.skipped(),
                        settings.modelSha256(),
                        SparkEmbed.sha256(settings.preprocessing()),
                        settings.preprocessing(),
                        SparkEnv.get().conf().getAppId() + "/" + attemptId,
                        executor,
                        (System.nanoTime() - start) / 1e9);
                boolean won = store.commit(task.table(), file, marker);
                return new ShardResult(
                        task.shard(),
                        won ? ShardResult.Outcome.COMMITTED : ShardResult.Outcome.LOST_RACE,
                        figures.images(),
                        figures.skipped(),
                        null,
                        attempt,
                        executor,
                        System.nanoTime() - start);
            } finally {
                ModelCache.giveBack(key, embedder);
            }
        }
    }

    /**
     * The input file, its damage (not a tar, cut short; a Parquet footer that does not read) failing
     * it: a table holds every sample of its file. A Parquet file is opened alone, by its footer.
     */
    private static Dataset open(String spec, long cacheBytes, TableColumns columns) {
        Consumer<String> warn = message -> {
            if (!message.startsWith("note:")) { // one shard fetched to read its headers: what a task does
                System.err.println("stoke spark-embed: " + spec + ": " + message);
            }
        };
        Dataset dataset = Datasets.openLocalOrUrl(spec, new UrlDatasetProvider.ShardCache(cacheBytes, null), columns);
        if (dataset instanceof ShardDataset shard && !shard.shards().problems().isEmpty()) {
            dataset.close();
            throw new IllegalStateException(
                    "damaged shard: " + String.join("; ", shard.shards().problems()));
        }
        return Datasets.checked(dataset, spec, ErrorPolicy.FAIL, warn);
    }

    /** The GPU Spark gave this task ({@code spark.task.resource.gpu.amount}), else device 0. */
    private static InferenceDevice device(EmbedSettings settings, TaskContext context) {
        if (!settings.device().cuda()) {
            return InferenceDevice.CPU;
        }
        Option<ResourceInformation> gpu = context.resources().get("gpu");
        if (gpu.isDefined() && gpu.get().addresses().length > 0) {
            return new InferenceDevice(true, Integer.parseInt(gpu.get().addresses()[0]));
        }
        return settings.device();
    }

    private static String describe(Throwable e) {
        String message = e.getMessage();
        return message == null ? e.getClass().getSimpleName() : message.replace('\n', ' ');
    }

    /** The task's threads: as asked, and never more than the task's cores; none asked: auto over them. */
    private static Workers workers(Workers asked, int cores) {
        if (asked == null) {
            return new Workers(cores, true);
        }
        return asked.tuned() ? new Workers(Math.min(asked.count(), cores), true) : asked;
    }

    /**
     * The seam the retry tests use to fail a first attempt part-way (a sink that throws after its
     * first batch); null, so every attempt writes straight to its tables, everywhere else. Package
     * private, and read in the task's JVM, so only a test running Spark in its own JVM can set it.
     */
    interface AttemptSink {
        EmbeddingSink sink(int attempt, EmbeddingSink tables);
    }

    static volatile AttemptSink attemptSink;
}
