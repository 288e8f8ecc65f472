package io.stoke.cli;

import io.stoke.embed.InferenceDevice;
import io.stoke.lakehouse.OutputTable;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.internal.Urls;
import io.stoke.serve.LoaderSettings;
import io.stoke.spark.Manifest;
import io.stoke.spark.SparkEmbed;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code stoke spark-embed DATA --model F.onnx --out OUT [--master URL]}: {@code stoke embed}'s
 * job on Apache Spark, one task per input file, a tar shard or a Parquet file ({@link SparkEmbed}). Spark is not in Stoke's jar: this
 * runs where Spark's jars are on the class path ({@code ./stoke spark-embed}, or spark-submit with
 * Stoke's jar), and says so in one sentence where they are not.
 */
@Command(
        name = "spark-embed",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Computes one embedding per image of DATA (tar shards or Parquet files) on Apache Spark, one task per "
                    + "input file: writes OUT/<shard>.parquet or OUT/<file>.parquet (columns shard, key, row, label, status, "
                    + "embedding; the table 'stoke embed --format parquet' writes), each file committed exactly once, and "
                    + "OUT/_manifest.json. A rerun into OUT skips committed files. Bad images become rows with their status "
                    + "and zero embeddings."
        })
public final class SparkEmbedCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(
            index = "0",
            paramLabel = "DATA",
            description = {
                "The shards (a folder, a brace pattern, an index.json, or an s3:// prefix) or local Parquet "
                        + "files (a .parquet file, a folder of them, or a pattern)."
            })
    String dataset;

    @Option(
            names = "--model",
            required = true,
            paramLabel = "FILE",
            description = "The ONNX model, a local file (Spark ships it to the executors).")
    Path model;

    @Option(
            names = "--out",
            required = true,
            paramLabel = "OUT",
            description = "Output: a local folder (shared by every machine of a cluster) or an s3:// prefix.")
    String out;

    @Option(
            names = "--master",
            paramLabel = "URL",
            description = {
                "Spark's master: spark://HOST:7077, yarn, k8s://..., local[N] (default: spark-submit's, else "
                        + "local[*], this machine)."
            })
    String master;

    @Option(
            names = "--conf",
            paramLabel = "KEY=VALUE",
            description = "A Spark setting, as spark-submit's --conf (spark.task.cpus=2, spark.speculation=true).")
    Map<String, String> conf = new LinkedHashMap<>();

    @Option(
            names = "--intra-op-threads",
            paramLabel = "N",
            description = "ONNX Runtime's threads per operator (default: the task's cores).")
    int intraOpThreads;

    @Option(
            names = "--device",
            paramLabel = "cpu|cuda",
            description = {
                "Where the model runs (default: ${DEFAULT-VALUE}). cuda: the GPU Spark gave the task "
                        + "(spark.task.resource.gpu.amount), else device 0; needs the onnxruntime_gpu build."
            })
    String device = "cpu";

    @Option(
            names = "--output-name",
            paramLabel = "NAME",
            description = "The model's output to keep, when it has several.")
    String outputName;

    @Option(
            names = "--shards-per-task",
            paramLabel = "N",
            description = {
                "Consecutive input files one task embeds, one after the other, each committed on its own "
                        + "(default: ${DEFAULT-VALUE}; more for many small shards: fewer tasks to schedule)."
            })
    int shardsPerTask = 1;

    @Option(
            names = "--output-table",
            paramLabel = "delta|iceberg",
            description = {
                "Make OUT a Delta Lake or Apache Iceberg table: at the job's end the shards' tables are "
                        + "appended to it, in one commit of the table's own library (created at the first run; a rerun "
                        + "appends what it committed). Default: Parquet files only."
            })
    String outputTable;

    @Option(
            names = "--dry-run",
            description = "Plan only: list the shards (through their index), read OUT's markers, say what would run.")
    boolean dryRun;

    @Mixin
    LoaderOptions options;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        String problem = refused();
        if (problem != null) {
            err.println("stoke spark-embed: " + problem);
            return Main.EXIT_USAGE;
        }
        if (options.decode().onGpu()) {
            err.println("stoke spark-embed: " + options.decode().flag()
                    + ": Spark's executors decode on their CPUs, not yet on a GPU; decoding on the CPU");
        }
        if (!Files.isRegularFile(model)) {
            err.println("stoke spark-embed: no model file " + model);
            return Main.EXIT_USAGE;
        }
        try {
            Class.forName("org.apache.spark.sql.SparkSession");
        } catch (ClassNotFoundException e) {
            err.println("stoke spark-embed: Apache Spark 4.2 is not on the class path: run it from a checkout"
                    + " (./stoke spark-embed, which uses the Spark jars the build fetched), or submit Stoke's jar with"
                    + " spark-submit --class io.stoke.cli.Main stoke.jar spark-embed ...");
            return Main.EXIT_FAILED;
        }
        if (Runtime.version().compareTo(Runtime.Version.parse("25.0.3")) < 0) {
            err.println(
                    "stoke spark-embed: note: Spark 4.2 asks for JDK 25.0.3 or newer; this is " + Runtime.version());
        }
        boolean workersGiven = spec.commandLine().getParseResult().hasMatchedOption("--workers");
        SparkEmbed.Request request = new SparkEmbed.Request(
                options.dataSpec(dataset), // a Delta Lake or Iceberg table's snapshot: the driver plans its files once
                model,
                outputName,
                options.transform(),
                out,
                options.settings().integer("batch_size"),
                workersGiven ? options.workers() : null,
                options.settings().integer("slots"),
                intraOpThreads,
                InferenceDevice.parse(device),
                options.settings().bytes("shard_cache_size"),
                shardsPerTask,
                options.columns(),
                outputTable == null ? null : OutputTable.Format.parse(outputTable));
        err.flush();
        if (dryRun) {
            String plan = SparkEmbed.dryRun(request, line -> err.println("stoke spark-embed: " + line));
            spec.commandLine()
                    .getOut()
                    .println("stoke spark-embed " + Urls.redact(dataset) + " -> " + out + ": " + plan);
            return 0;
        }
        Manifest m = SparkEmbed.run(master, conf, request, line -> {
            err.println("stoke spark-embed: " + line);
            err.flush();
        });
        PrintWriter stdout = spec.commandLine().getOut();
        stdout.printf(Locale.ROOT, "stoke spark-embed %s -> %s%n", Urls.redact(dataset), out);
        stdout.printf(
                Locale.ROOT,
                "  shards        %d (%d committed now, %d before)%n",
                m.shards(),
                m.committed(),
                m.committedBefore());
        stdout.printf(Locale.ROOT, "  rows          %d (%d did not decode: status rows)%n", m.rows(), m.failedRows());
        stdout.printf(Locale.ROOT, "  failed shards %d%n", m.failed().size());
        stdout.printf(Locale.ROOT, "  time          %.1f s (planning %.2f s)%n", m.seconds(), m.planSeconds());
        stdout.flush();
        return m.failed().isEmpty() ? 0 : Main.EXIT_FAILED;
    }

    /** The loader options that make no sense for this job, in one sentence, or null. */
    private String refused() {
        var parsed = spec.commandLine().getParseResult();
        LoaderSettings s = options.settings();
        if (s.longValue("epochs") != 1
                || s.integer("start_batch") != 0
                || s.longValue("start_epoch") != 0
                || s.given("start_state")
                || s.given("start_cuts")) {
            return "embedding makes one pass over the data: no --epochs or --start-* option";
        }
        if (s.flag("shuffle") || s.integer("world_size") != 1 || s.integer("rank") != 0) {
            return "each task embeds a whole shard in order: no --shuffle, --rank or --world-size (Spark spreads"
                    + " the shards)";
        }
        if (!s.text("transform").equals("eval")) {
            return "embeddings use the evaluation transform (Resize + CenterCrop), not --transform "
                    + s.text("transform");
        }
        if (shardsPerTask < 1) {
            return "--shards-per-task must be at least 1, not " + shardsPerTask;
        }
        if (outputTable != null) {
            try {
                OutputTable.Format.parse(outputTable);
            } catch (IllegalArgumentException e) {
                return "--output-table: " + e.getMessage();
            }
        }
        if (parsed.hasMatchedOption("--on-error") && options.policy() == ErrorPolicy.FAIL) {
            return "a bad image becomes a row with its status (--on-error skip); a shard that cannot be read is named"
                    + " in the manifest: --on-error fail does not apply";
        }
        return null;
    }
}
