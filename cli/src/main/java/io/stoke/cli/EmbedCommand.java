package io.stoke.cli;

import ai.onnxruntime.OrtException;
import io.stoke.embed.Embedder;
import io.stoke.embed.EmbeddingJob;
import io.stoke.embed.EmbeddingOutput;
import io.stoke.embed.EmbeddingSink;
import io.stoke.embed.EmbeddingTables;
import io.stoke.embed.InferenceDevice;
import io.stoke.embed.ModelContract;
import io.stoke.gpu.CudaAvailability;
import io.stoke.gpu.DeviceBatch;
import io.stoke.gpu.GpuDecodeOpening;
import io.stoke.gpu.GpuDecodeStage;
import io.stoke.loader.Batch;
import io.stoke.loader.BatchSource;
import io.stoke.loader.BatchView;
import io.stoke.loader.Loader;
import io.stoke.loader.autoworkers.AutoWorkersLog;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.serve.AutoWorkersLogFile;
import io.stoke.serve.LoaderSettings;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.ToIntFunction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code stoke embed DATA --model FILE.onnx --out DIR}: one vector per image, ONNX Runtime fed
 * from the ring without a copy ({@link Embedder}), written atomically ({@link EmbeddingOutput}).
 */
@Command(
        name = "embed",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Computes one embedding per image of DATA with an ONNX model: writes DIR/embeddings.npy (float32 "
                    + "[N, D], rows in dataset order), DIR/paths.txt (row i's file) and, under --on-error skip, DIR/skipped.txt "
                    + "(those rows are zeros). The model's input decides the pixels: float32 [N, 3, H, W] normalised with "
                    + "--mean and --std (ImageNet's by default), or uint8 [N, H, W, 3]. A model whose metadata records its "
                    + "preprocessing (stoke.resize, stoke.crop, stoke.interpolation, stoke.mean, stoke.std, as "
                    + "python -m stoke.onnx_export writes them) is refused with other flags. Takes the same loader "
                    + "options as 'stoke bench'."
        })
public final class EmbedCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DATA", description = LoaderOptions.DATA)
    String data;

    @Option(names = "--model", required = true, paramLabel = "FILE", description = "The ONNX model.")
    Path model;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Output folder (created when missing).")
    Path out;

    @Option(
            names = "--intra-op-threads",
            paramLabel = "N",
            description = {
                "ONNX Runtime's threads per operator (default: ${DEFAULT-VALUE}, measured best beside "
                        + "the loader's --workers on this machine's cores: see embed/README.md)."
            })
    int intraOpThreads = defaultIntraOpThreads();

    @Option(
            names = "--device",
            paramLabel = "cpu|cuda[:N]",
            description = "Where the model runs (default: ${DEFAULT-VALUE}).")
    String device = "cpu";

    @Option(
            names = "--output-name",
            paramLabel = "NAME",
            description = "The model's output to keep, when it has several.")
    String outputName;

    @Option(names = "--overwrite", description = "Replace a finished output in DIR.")
    boolean overwrite;

    @Option(
            names = "--format",
            paramLabel = "FORMAT",
            description = {
                "npy (default): DIR/embeddings.npy, paths.txt, skipped.txt. parquet: one table per input "
                        + "file, DIR/<shard>.parquet or DIR/<file>.parquet (DIR/embeddings.parquet for images), columns "
                        + "shard, key, row (in the input file), label, status, embedding: the table 'stoke spark-embed' writes."
            })
    Choices.EmbedFormat format = Choices.EmbedFormat.npy;

    @Mixin
    LoaderOptions options;

    /** The cores, all of them: operators run between batches, while the workers decode the next ones. */
    static int defaultIntraOpThreads() {
        return Runtime.getRuntime().availableProcessors();
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        PrintWriter stdout = spec.commandLine().getOut();
        InferenceDevice where;
        try {
            where = InferenceDevice.parse(device);
        } catch (IllegalArgumentException e) {
            err.println("stoke embed: " + e.getMessage());
            return Main.EXIT_USAGE;
        }
        if (where.cuda()) {
            Optional<String> noDriver = CudaAvailability.driverMissing();
            if (noDriver.isPresent()) {
                err.println("stoke embed: " + noDriver.get());
                return Main.EXIT_NO_DEVICE;
            }
        }
        LoaderSettings s = options.settings();
        if (s.longValue("epochs") != 1
                || s.integer("start_batch") != 0
                || s.given("start_state")
                || s.given("start_cuts")) {
            err.println("stoke embed: embed makes one pass over the data: --epochs 1 and --start-batch 0, no "
                    + "--start-state or --start-cuts");
            return Main.EXIT_USAGE;
        }
        if (!s.text("transform").equals("eval")) {
            err.println("stoke embed: embeddings use the evaluation transform (Resize + CenterCrop), not --transform "
                    + s.text("transform"));
            return Main.EXIT_USAGE;
        }
        if (format == Choices.EmbedFormat.parquet && (s.flag("shuffle") || s.integer("world_size") != 1)) {
            err.println("stoke embed: --format parquet writes whole input files in order: no --shuffle, --world-size 1"
                    + " (spread shards over machines with 'stoke spark-embed')");
            return Main.EXIT_USAGE;
        }
        try (Dataset dataset = options.open(data);
                Embedder embedder = open(where, err)) {
            if (embedder == null) {
                return Main.EXIT_FAILED;
            }
            ModelContract contract = embedder.contract();
            TransformSpec transform;
            try {
                transform = contract.transform(options.transform());
            } catch (IllegalArgumentException e) {
                err.println("stoke embed: " + e.getMessage());
                return Main.EXIT_USAGE;
            }
            Loader.Builder builder = options.builder(dataset).transform(transform);
            int[] rows = EmbeddingJob.rows(builder.sampler(), s.longValue("start_epoch"));
            err.printf(
                    Locale.ROOT,
                    "stoke embed: %d images, %s: input %s %s, output %s (%d values) on %s, workers %s,"
                            + " %d operator threads%n",
                    rows.length,
                    model.getFileName(),
                    contract.inputName(),
                    contract.layout(),
                    contract.outputName(),
                    contract.dimension(),
                    where,
                    options.workers(),
                    intraOpThreads);
            if (contract.side() == 0) {
                // The model leaves H and W free: say what the run feeds it, which the flags decide.
                err.println("stoke embed: the model takes images of any size; this run gives it " + transform.crop()
                        + "x" + transform.crop() + " (--crop " + transform.crop() + ", after --resize "
                        + transform.resize() + ")");
            }
            if (contract.preprocess().declared()) {
                err.println("stoke embed: the model's recorded preprocessing, which this run's flags match: "
                        + contract.preprocess().flags(contract.layout() == ModelContract.Layout.FLOAT32_NCHW));
            }
            err.flush();
            EmbeddingJob.Figures f;
            AutoWorkersLog tuning = null;
            GpuDecodeStage stage = null;
            // The figures' CPU window opens before the decoding threads start, whatever they do before the run.
            long cpuMark = EmbeddingJob.processCpuNanos();
            GpuDecodeOpening.Decode decode = options.decode();
            if (decode.onGpu()) {
                int readers = Math.min(256, Math.max(1, options.workers().count()));
                stage = GpuDecodeOpening.open(
                        builder,
                        decode,
                        where.cuda() ? where.index() : 0,
                        readers,
                        options.decodeCpuBatches(),
                        options.decodeGpuThreads(),
                        where.cuda(), // the model on the GPU: left the GPU while it is behind
                        line -> err.println("stoke embed: " + line));
                err.flush();
            }
            try {
                if (stage != null) {
                    try (GpuDecodeStage decoding = stage) {
                        Sampler sampler = builder.sampler();
                        EmbeddingJob.Inference<DeviceBatch> inference = where.cuda()
                                ? onDevice(decoding, embedder, sampler.batchSize(), err)
                                : viaHost(decoding, embedder, sampler.batchSize());
                        EmbeddingPass pass = sink -> run(
                                decoding,
                                inference,
                                b -> sampler.paddedIn(b.epoch(), (int) b.batchIndex()),
                                embedder,
                                sink,
                                rows,
                                cpuMark);
                        f = write(dataset, rows, contract, pass, err);
                    }
                } else {
                    try (Loader loader = builder.build()) {
                        EmbeddingPass pass = sink -> run(
                                loader,
                                b -> embedder.embed(b.pixels(), b.shape()),
                                Batch::paddedCount,
                                embedder,
                                sink,
                                rows,
                                cpuMark);
                        f = write(dataset, rows, contract, pass, err);
                        tuning = loader.autoWorkers();
                    }
                }
            } catch (SampleException | NoSampleDecodedException e) {
                err.println("stoke embed: " + e.getMessage());
                err.println(
                        format == Choices.EmbedFormat.parquet
                                ? "stoke embed: the tables of the input files before it are written, none after (--on-error skip"
                                        + " embeds the rest and gives the bad files status rows)"
                                : "stoke embed: nothing written (--on-error skip embeds the rest and lists the bad files)");
                return Main.EXIT_FAILED;
            } catch (IllegalStateException e) {
                if (e.getMessage() != null && e.getMessage().contains("--overwrite")) {
                    err.println("stoke embed: " + e.getMessage());
                    return Main.EXIT_USAGE;
                }
                throw e;
            }
            stdout.printf(Locale.ROOT, "stoke embed %s -> %s%n", Urls.redact(data), this.out);
            stdout.printf(
                    Locale.ROOT, "  images                 %d (%d skipped, zero rows)%n", f.images(), f.skipped());
            stdout.printf(Locale.ROOT, "  throughput             %.0f images/s%n", f.imagesPerSecond());
            stdout.printf(Locale.ROOT, "  model time per batch   %.1f ms%n", f.modelMillisPerBatch());
            stdout.printf(
                    Locale.ROOT,
                    "  loader wait per batch  %.1f ms%s%n",
                    f.waitMillisPerBatch(),
                    f.waitMillisPerBatch() > f.modelMillisPerBatch()
                            ? "  (the loader is the bottleneck)"
                            : "  (the model is the bottleneck)");
            stdout.printf(
                    Locale.ROOT,
                    "  CPU per image          %.2f ms (all threads), of which decoding %.2f ms%n",
                    f.cpuMillisPerImage(),
                    f.decodeMillisPerImage());
            stdout.printf(Locale.ROOT, "  batches                %d of %d%n", f.batches(), s.integer("batch_size"));
            if (tuning != null) {
                stdout.print(AutoWorkersLogFile.summary(tuning));
            }
            stdout.flush();
            return 0;
        }
    }

    /** One pass of the job's batches through the model into a sink: over a loader, or the GPU decode stage. */
    @FunctionalInterface
    private interface EmbeddingPass {
        EmbeddingJob.Figures into(EmbeddingSink sink) throws OrtException;
    }

    /** The pass into DIR in the run's {@code --format}. */
    private EmbeddingJob.Figures write(
            Dataset dataset, int[] rows, ModelContract contract, EmbeddingPass pass, PrintWriter err) throws Exception {
        return format == Choices.EmbedFormat.parquet
                ? toTables(dataset, rows, contract, pass, err)
                : toNpy(dataset, rows, contract, pass, err);
    }

    private EmbeddingJob.Figures toNpy(
            Dataset dataset, int[] rows, ModelContract contract, EmbeddingPass pass, PrintWriter err) throws Exception {
        try (EmbeddingOutput output =
                EmbeddingOutput.create(out, contract.dimension(), EmbeddingJob.paths(dataset, rows), overwrite)) {
            EmbeddingJob.Figures f = pass.into(output);
            output.commit();
            for (String s : output.skipped()) {
                err.println("skipped: " + s);
            }
            return f;
        }
    }

    private EmbeddingJob.Figures toTables(
            Dataset dataset, int[] rows, ModelContract contract, EmbeddingPass pass, PrintWriter err) throws Exception {
        try (EmbeddingTables tables = EmbeddingTables.create(out, dataset, rows, contract.dimension(), overwrite)) {
            EmbeddingJob.Figures f = pass.into(tables);
            tables.commit();
            err.println("stoke embed: " + tables.written().size() + " Parquet table"
                    + (tables.written().size() == 1 ? "" : "s") + " in " + out);
            return f;
        }
    }

    private static <B extends BatchView> EmbeddingJob.Figures run(
            BatchSource<B> source,
            EmbeddingJob.Inference<? super B> inference,
            ToIntFunction<? super B> padded,
            Embedder embedder,
            EmbeddingSink sink,
            int[] rows,
            long cpuMark)
            throws OrtException {
        ProgressBar progress = new ProgressBar(System.err, rows.length);
        long[] last = {0};
        EmbeddingJob.Figures f = EmbeddingJob.run(source, inference, padded, embedder, sink, rows, cpuMark, done -> {
            progress.advance(done - last[0]);
            last[0] = done;
        });
        progress.finish();
        return f;
    }

    /**
     * A device batch embedded by a model on the CPU: copied into one pinned host buffer of a whole
     * batch, taken from the stage at the first batch and reused (the model has read it before the
     * next copy: one consumer, one batch at a time).
     */
    private static EmbeddingJob.Inference<DeviceBatch> viaHost(GpuDecodeStage stage, Embedder embedder, int batchSize) {
        MemorySegment[] host = {null};
        return batch -> {
            if (host[0] == null) {
                host[0] = stage.pinnedHostBuffer(batch.byteSize() / batch.size() * batchSize);
            }
            batch.copyToHost(host[0]);
            return embedder.embed(host[0], batch.shape());
        };
    }

    /**
     * A device batch embedded by a model on the same GPU, where it lies: once its stream is done,
     * ONNX Runtime's CUDA provider reads it through IO binding ({@link Embedder#embedOnDevice}), and
     * only the embeddings cross to the host. Where ONNX Runtime refuses that at the first batch (a
     * Java API that keeps its session elsewhere, a provider that cannot take the memory), it says so
     * once, loudly, and every batch goes through the host ({@link #viaHost}); a refusal after the
     * first batch is an error.
     */
    static EmbeddingJob.Inference<DeviceBatch> onDevice(
            GpuDecodeStage stage, Embedder embedder, int batchSize, PrintWriter err) {
        return new OnDeviceOrHost<DeviceBatch>(
                batch -> {
                    batch.synchronize();
                    return embedder.embedOnDevice(batch.pointer(), batch.byteSize(), batch.shape());
                },
                viaHost(stage, embedder, batchSize),
                refusal -> {
                    err.println("stoke embed: WARNING: ONNX Runtime cannot read the batches in device memory ("
                            + refusal + "); each batch is copied to the host, and ONNX Runtime copies it back"
                            + " (said once)");
                    err.flush();
                });
    }

    private Embedder open(InferenceDevice where, PrintWriter err) {
        try {
            return Embedder.open(model, intraOpThreads, where, outputName);
        } catch (OrtException e) {
            String msg = e.getMessage();
            if (where.cuda() && msg != null && msg.toLowerCase(Locale.ROOT).contains("cuda")) {
                err.println("stoke embed: ONNX Runtime cannot use CUDA here (" + msg
                        + "). This build bundles ONNX Runtime's"
                        + " CPU package; build with -Donnxruntime.artifact=onnxruntime_gpu for its CUDA provider.");
            } else {
                err.println("stoke embed: cannot open the model " + model + ": " + msg);
            }
            return null;
        } catch (IllegalArgumentException e) {
            err.println("stoke embed: " + model + ": " + e.getMessage());
            return null;
        }
    }
}
