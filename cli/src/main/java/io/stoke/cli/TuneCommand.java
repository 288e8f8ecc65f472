package io.stoke.cli;

import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.tune.LoaderFactory;
import io.stoke.tune.ModelStep;
import io.stoke.tune.SleepStep;
import io.stoke.tune.Step;
import io.stoke.tune.TuneReport;
import io.stoke.tune.Tuner;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;

/**
 * {@code stoke tune DATA (--step-ms MS | --model F.onnx) --out DIR}: which batch size and how many
 * workers feed this step fastest on this machine ({@link Tuner}), written to {@code DIR/tune.json}
 * and {@code DIR/tune.png}.
 */
@Command(
        name = "tune",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Recommends --batch-size and --workers for feeding a step from DATA on this machine.",
            "",
            "Measures decoding alone at 1 worker and at every core, and the step at each batch size (a sleep"
                    + " of --step-ms per batch, or an ONNX --model run on batches of DATA, on the same cores as the"
                    + " workers); predicts images/s at every (batch size, workers); runs the best few predictions for"
                    + " real, each for --seconds-per-point after a warm-up; recommends the best measured, or the"
                    + " fewest workers among points within 3%% of it. --exhaustive runs every point instead.",
            "",
            "Writes DIR/tune.json (the recommendation and every figure) and DIR/tune.png (images/s against"
                    + " workers, a line per batch size), and prints the table.",
            ""
        })
public final class TuneCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DATA", description = LoaderOptions.DATA)
    String data;

    @Option(
            names = "--step-ms",
            paramLabel = "MS",
            description =
                    "The step is a sleep of MS milliseconds per batch, whatever its size (a model on an accelerator: no CPU). With --step-ms-per-image, their sum.")
    Double stepMs;

    @Option(
            names = "--step-ms-per-image",
            paramLabel = "MS",
            description =
                    "The step sleeps MS milliseconds per image of the batch (the benchmarks' harness's --model-ms-per-image): a batch of B sleeps B x MS.")
    Double stepMsPerImage;

    @Option(
            names = "--model",
            paramLabel = "FILE",
            description =
                    "The step is this ONNX model (as 'stoke embed' runs it: on the CPU, sharing the cores with the workers), run on batches of DATA. The evaluation transform, as embed.")
    Path model;

    @Option(
            names = "--intra-op-threads",
            paramLabel = "N",
            description = "--model: ONNX Runtime's threads per operator (default: ${DEFAULT-VALUE}, as embed).")
    int intraOpThreads = Runtime.getRuntime().availableProcessors(); // embed's default: every core

    @Option(
            names = "--output-name",
            paramLabel = "NAME",
            description = "--model: the model's output to compute, when it has several.")
    String outputName;

    @Option(
            names = "--batch-sizes",
            paramLabel = "B",
            split = ",",
            description = "The batch sizes to try (default: 32,64,128,256).")
    List<Integer> batchSizes = List.of(32, 64, 128, 256);

    /** Workers from 1 to this are considered: the shared --max-workers, else twice the cores. */
    private int maxWorkers;

    @Option(
            names = "--seconds-per-point",
            paramLabel = "S",
            description =
                    "Each measured point runs S seconds (and at least 3 batches) after a warm-up of S/6 seconds (and at least 2 batches); the decode probes run S/3 (default: ${DEFAULT-VALUE}).")
    double secondsPerPoint = 3;

    @Option(
            names = "--candidates",
            paramLabel = "K",
            description = "At most K points are run for real (default: ${DEFAULT-VALUE}).")
    int candidates = 3;

    @Option(
            names = "--exhaustive",
            description =
                    "Run every batch size at every number of workers (the sweep tune saves), and write the same files: to check tune against it.")
    boolean exhaustive;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Output folder (created when missing).")
    Path out;

    @Mixin
    LoaderOptions options;

    @Override
    public Integer call() throws Exception {
        long start = System.nanoTime();
        PrintStream err = System.err;
        // Past the cores, more workers pay only where decoding waits on I/O (remote shards).
        Integer most = options.settings().optionalInteger("max_workers");
        maxWorkers = most != null ? most : 2 * Runtime.getRuntime().availableProcessors();
        String refused = refused();
        if (refused != null) {
            err.println("stoke tune: " + refused);
            return Main.EXIT_USAGE;
        }
        if (options.decode().onGpu()) {
            err.println("stoke tune: " + options.decode().flag()
                    + ": tune measures the CPU workers' decoding, not yet the GPU's; decoding on the CPU");
        }
        List<Integer> sizes = List.copyOf(new TreeSet<>(batchSizes));
        int cores = Runtime.getRuntime().availableProcessors();
        try (Dataset dataset = options.open(data);
                Step step = step(err)) {
            if (step == null) {
                return Main.EXIT_FAILED;
            }
            TransformSpec transform;
            try {
                transform = step instanceof ModelStep m ? m.transform(options.transform()) : options.transform();
            } catch (IllegalArgumentException e) {
                err.println("stoke tune: " + e.getMessage());
                return Main.EXIT_USAGE;
            }
            int samples = options.builder(dataset).sampler().samplesPerEpoch();
            if (sizes.getLast() > samples) {
                err.printf(
                        Locale.ROOT,
                        "stoke tune: --batch-sizes %d is more than the %d images an epoch of %s holds%n",
                        sizes.getLast(),
                        samples,
                        Urls.redact(data));
                return Main.EXIT_USAGE;
            }
            LoaderFactory factory = (b, w) -> options.builder(dataset)
                    .transform(transform)
                    .batchSize(b)
                    .workers(w)
                    .epochs(0)
                    .startEpoch(0)
                    .startBatch(0);
            err.printf(
                    Locale.ROOT,
                    "stoke tune: %d images in %s; step: %s; batch sizes %s, 1 to %d workers, %d cores%n",
                    dataset.size(),
                    Urls.redact(data),
                    step.describe(),
                    sizes,
                    maxWorkers,
                    cores);
            new BenchRun(System.out, err).warmPageCache(dataset, transform.maxFileBytes());
            Tuner.Settings settings =
                    new Tuner.Settings(sizes, maxWorkers, cores, secondsPerPoint, candidates, exhaustive);
            Tuner.Result result = new Tuner(factory, step, settings, err).run();
            TuneReport.Report report = TuneReport.of(
                    result,
                    settings,
                    command(),
                    new TuneReport.Dataset(Urls.redact(data), dataset.size(), describe(transform)),
                    new TuneReport.Consumer(
                            step.describe(),
                            model == null ? null : model.toString(),
                            stepMs,
                            stepMsPerImage,
                            model == null ? null : intraOpThreads),
                    (System.nanoTime() - start) / 1e9);
            Files.createDirectories(out);
            TuneReport.write(report, out.resolve("tune.json"));
            TunePlot.write(report, out.resolve("tune.png"));
            TuneReport.print(report, System.out);
            System.out.printf(Locale.ROOT, "wrote %s and %s%n", out.resolve("tune.json"), out.resolve("tune.png"));
            return 0;
        }
    }

    /** Why these options cannot run, in one sentence; null when they can. */
    private String refused() {
        ParseResult parsed = spec.commandLine().getParseResult();
        if (parsed.hasMatchedOption("--workers")) {
            return "tune chooses --workers itself; --max-workers N caps it";
        }
        if (parsed.hasMatchedOption("--batch-size")) {
            return "tune tries each of --batch-sizes rather than one --batch-size";
        }
        for (String o : List.of("--epochs", "--start-epoch", "--start-batch", "--start-state", "--start-cuts")) {
            if (parsed.hasMatchedOption(o)) {
                return "tune runs each point for --seconds-per-point, so " + o + " has no meaning here";
            }
        }
        boolean sleep = stepMs != null || stepMsPerImage != null;
        if (model == null && !sleep) {
            return "say what takes the batches: --step-ms MS (a fixed step per batch), --step-ms-per-image MS,"
                    + " or --model F.onnx";
        }
        if (model != null && sleep) {
            return "--model and --step-ms/--step-ms-per-image are alternatives: give one";
        }
        for (Double ms : new Double[] {stepMs, stepMsPerImage}) {
            if (ms != null && !(ms >= 0 && Double.isFinite(ms))) {
                return "--step-ms and --step-ms-per-image take a finite number of milliseconds, at least 0, not " + ms;
            }
        }
        String transform = options.settings().text("transform");
        if (model != null && !transform.equals("eval")) {
            return "--model runs on the evaluation transform (Resize + CenterCrop), as embed does, not --transform "
                    + transform;
        }
        if (batchSizes.isEmpty() || batchSizes.stream().anyMatch(b -> b < 1)) {
            return "--batch-sizes takes positive numbers, not " + batchSizes;
        }
        if (maxWorkers < 1) {
            return "--max-workers must be at least 1, not " + maxWorkers;
        }
        if (!(secondsPerPoint > 0 && Double.isFinite(secondsPerPoint))) {
            return "--seconds-per-point must be a positive number of seconds, not " + secondsPerPoint;
        }
        if (candidates < 1) {
            return "--candidates must be at least 1, not " + candidates;
        }
        return null;
    }

    /** The step, or null when the model cannot be opened (said on {@code err}). */
    private Step step(PrintStream err) {
        if (model == null) {
            return new SleepStep(stepMs == null ? 0 : stepMs, stepMsPerImage == null ? 0 : stepMsPerImage);
        }
        try {
            return TuneModel.open(model, intraOpThreads, outputName, err);
        } catch (NoClassDefFoundError e) {
            err.println("stoke tune: --model needs ONNX Runtime, which this build leaves out (the Python wheel"
                    + " does): run it from a Stoke checkout's ./stoke, or tune a sleep step (--step-ms)");
            return null;
        }
    }

    private String command() {
        // The parse result's arguments start with the sub-command's name.
        // Into tune.json: a presigned URL's query is a credential.
        return Urls.redactAll(
                "stoke " + String.join(" ", spec.commandLine().getParseResult().originalArgs()));
    }

    private static String describe(TransformSpec t) {
        return String.format(
                Locale.ROOT,
                "%s, resize %d, crop %d, %s",
                t.train() != null ? "train" : t.squash() ? "squash" : "eval",
                t.resize(),
                t.crop(),
                t.output() == TransformSpec.Output.UINT8_HWC ? "uint8" : "float32");
    }
}
