package io.stoke.bench.harness;

import io.stoke.cli.Main;
import io.stoke.loader.source.ImageFolder;
import io.stoke.testdata.DemoSample;
import io.stoke.testdata.SyntheticImageNet;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code stoke harness}: the Stoke vs PyTorch DataLoader experiment. Sweeps batch size, workers,
 * simulated model time, dataset (JPEG; preprocessed raw tensors: raw shards through Stoke's
 * Loader, {@code .raw} files of the same bytes through PyTorch's) and start (cold: a fresh process;
 * warm: after an untimed warm-up in the same process) for both loaders, each run in a process of
 * its own watched from {@code /proc}; writes every batch's wait to CSV, a Markdown summary and PNG
 * plots.
 */
@Command(
        name = "harness",
        mixinStandardHelpOptions = true,
        description = {
            "Runs the Stoke vs PyTorch DataLoader experiment and writes OUT/batches.csv (every batch of",
            "every run), OUT/runs.csv, OUT/summary.md and OUT/plots/*.png. Each run is a process of its own;",
            "the harness samples the memory and CPU time of it and all its children. See docs/benchmarks/README.md."
        })
public final class HarnessCommand implements Callable<Integer> {
    /** The command line as given, so that the summary names the command that regenerates it. */
    @Spec
    CommandSpec spec;

    @Option(
            names = "--profile",
            paramLabel = "quick|full",
            description = {
                "quick: 1,000 images, batch 32 and 256, workers 1, 2, 4, one repeat (minutes on 2 cores);",
                "full: 4,096 images, batch 32 to 1024, workers 1 to 8, 3 repeats (hours) (default: ${DEFAULT-VALUE}).",
                "Both run every point cold and warm (see --starts)."
            })
    String profile = "quick";

    @Option(
            names = "--out",
            paramLabel = "DIR",
            required = true,
            description = "Output folder (created; files in it are replaced).")
    Path out;

    @Option(
            names = "--dataset",
            paramLabel = "DIR",
            description = "JPEG ImageFolder tree to use instead of the profile's generated one.")
    Path dataset;

    @Option(
            names = "--data-dir",
            paramLabel = "DIR",
            description = {
                "Where the generated JPEG dataset and the preprocessed raw dataset (raw shards for Stoke,",
                "the same bytes as .raw files for PyTorch) are kept and reused (default: OUT/data). Each is made",
                "once per folder; the same options give the same bytes."
            })
    Path dataDir;

    @Option(
            names = "--images",
            paramLabel = "N",
            description = "Size of the generated JPEG dataset (default: the profile's).")
    Integer images;

    @Option(
            names = "--photos",
            paramLabel = "DIR",
            description = "Generate the dataset from the photographs under DIR.")
    Path photos;

    @Option(
            names = "--batch-sizes",
            split = ",",
            paramLabel = "N,...",
            description = "Override the profile's batch sizes.")
    List<Integer> batchSizes;

    @Option(
            names = "--workers",
            split = ",",
            paramLabel = "N,...",
            description = "Override the profile's worker counts.")
    List<Integer> workers;

    @Option(names = "--repeats", paramLabel = "N", description = "Override the profile's repeats.")
    Integer repeats;

    @Option(
            names = "--model-ms-per-image",
            paramLabel = "MS",
            description = {
                "Simulated model time of the bottleneck runs, per image of the batch: the consumer sleeps",
                "batch * MS ms after each batch (default: ${DEFAULT-VALUE}, i.e. a model at 250 images/s)."
            })
    double modelMsPerImage = 4.0;

    @Option(names = "--no-model", description = "Leave out the runs with simulated model time.")
    boolean noModel;

    @Option(
            names = "--loaders",
            split = ",",
            paramLabel = "NAME,...",
            description = {
                "stoke; pytorch (torch's DataLoader, ImageFolder + PIL); pytorch-tensor (the same DataLoader,",
                "torchvision.io.decode_image + v2 transforms on uint8 tensors: torch's fastest CPU path);",
                "torchdata-nodes (torchdata.nodes, the tensor path on a ParallelMapper of threads) (default: all;",
                "a PyTorch-side loader the Python cannot run is left out with a note)."
            })
    List<String> loaders = HarnessLoaders.ALL;

    @Option(
            names = "--datasets",
            split = ",",
            paramLabel = "NAME,...",
            description = {
                "jpeg: the JPEG files, decoded each epoch; raw: the same images preprocessed once",
                "(Resize 256 + CenterCrop 224, uint8), read by Stoke's Loader from raw shards (stoke pack",
                "--format raw) and by PyTorch from .raw files of the same bytes (default: both)."
            })
    List<String> datasets = List.of("jpeg", "raw");

    @Option(
            names = "--python",
            paramLabel = "PATH",
            description = {
                "Python with torch and torchvision (default: today's torch, the venv of",
                "clients/python/stacks/torch214.sh, where it is made; else /usr/bin/python3)."
            })
    Path python;

    @Option(
            names = "--torch-script",
            paramLabel = "FILE",
            description = "Default: benchmarks/python/torch_loader.py of this checkout.")
    Path torchScript;

    @Option(
            names = "--starts",
            split = ",",
            paramLabel = "NAME,...",
            description = {
                "cold: a fresh process, nothing untimed before the clock, as a user starts a job;",
                "warm: the same process first takes --warmup-images images untimed (default: both)."
            })
    List<String> starts = List.of(RunKey.COLD, RunKey.WARM);

    @Option(
            names = "--transform",
            paramLabel = "KIND",
            description = {
                "eval: Resize(256) + CenterCrop(224) (default); train: RandomResizedCrop(224) +",
                "RandomHorizontalFlip(), torchvision's on the PyTorch side, Stoke's on its own. JPEG runs only",
                "(the raw dataset holds the eval transform's output)."
            })
    String transform = "eval";

    @Option(
            names = "--warmup-images",
            paramLabel = "N",
            description = {
                "Images a warm run's process takes untimed before the timed epoch: Stoke through a loader",
                "of the same settings (compiling its kernels), PyTorch through the same DataLoader in whole",
                "epochs (its persistent workers then serve the timed epoch) (default: ${DEFAULT-VALUE})."
            })
    int warmupImages = 2048;

    @Option(
            names = "--stoke-slots",
            paramLabel = "N",
            description = {
                "Stoke's ring slots (batches decoded ahead plus those held); its memory is about",
                "N x batch x 150 KB (default: ${DEFAULT-VALUE}, Stoke's default)."
            })
    int stokeSlots = 4;

    @Option(
            names = "--sample-ms",
            paramLabel = "MS",
            description = "Interval of the /proc memory and CPU samples (default: ${DEFAULT-VALUE}).")
    int sampleMs = 50;

    @Option(
            names = "--run-timeout-s",
            paramLabel = "S",
            description = "A run taking longer is killed and recorded as failed (default: ${DEFAULT-VALUE}).")
    int runTimeoutS = 900;

    @Option(
            names = "--report-only",
            description = {
                "Run nothing: redraw OUT/summary.md and OUT/plots from the",
                "CSV files and report.json of an earlier sweep into OUT."
            })
    boolean reportOnly;

    private Writer log;

    private record Profile(int images, List<Integer> batchSizes, List<Integer> workers, int repeats) {}

    @Override
    public Integer call() throws Exception {
        Profile p = switch (profile) {
            case "quick" -> new Profile(DemoSample.IMAGES, List.of(32, 256), List.of(1, 2, 4), 1);
            case "full" -> new Profile(4096, List.of(32, 128, 256, 512, 1024), List.of(1, 2, 4, 8), 3);
            default -> throw new IllegalArgumentException("--profile must be quick or full, not " + profile);
        };
        p = new Profile(
                images != null ? images : p.images(),
                batchSizes != null ? batchSizes : p.batchSizes(),
                workers != null ? workers : p.workers(),
                repeats != null ? repeats : p.repeats());
        for (String l : loaders) {
            if (!HarnessLoaders.ALL.contains(l)) {
                throw new IllegalArgumentException(
                        "--loaders takes " + String.join(", ", HarnessLoaders.ALL) + ", not " + l);
            }
        }
        if (python == null) {
            python = defaultPython();
        }
        for (String d : datasets) {
            if (!d.equals("jpeg") && !d.equals("raw")) {
                throw new IllegalArgumentException("--datasets takes jpeg and raw, not " + d);
            }
        }
        for (String s : starts) {
            if (!s.equals(RunKey.COLD) && !s.equals(RunKey.WARM)) {
                throw new IllegalArgumentException("--starts takes cold and warm, not " + s);
            }
        }
        if (warmupImages < 0) {
            throw new IllegalArgumentException("--warmup-images must not be negative: " + warmupImages);
        }
        if (!transform.equals("eval") && !transform.equals("train")) {
            throw new IllegalArgumentException("--transform must be eval or train, not " + transform);
        }
        if (reportOnly) {
            return report();
        }
        long harnessStart = System.nanoTime();
        Files.createDirectories(out.resolve("logs"));
        Files.createDirectories(out.resolve("runs"));
        Files.createDirectories(out.resolve("plots"));
        log = Files.newBufferedWriter(out.resolve("harness.log"), StandardCharsets.UTF_8);
        try {
            return sweep(p, harnessStart);
        } finally {
            log.close();
        }
    }

    private int sweep(Profile p, long harnessStart) throws Exception {
        int cores = Runtime.getRuntime().availableProcessors();
        String machine = Machine.describe();
        say("machine: " + machine);
        Path jpegRoot = jpegDataset(p);
        List<String> notes = new ArrayList<>();
        List<String> loadersRun = new ArrayList<>(loaders);
        String torchVersions = null;
        Path script = null;
        if (loadersRun.stream().anyMatch(HarnessLoaders::torchSide)) {
            script = torchScript != null ? torchScript : findScript();
            TorchScript.Check torch = TorchScript.check(python, script);
            if (!torch.runs()) {
                String why = "PyTorch's DataLoader was not run: " + torch.whyNot();
                say(why);
                notes.add(why);
                loadersRun.removeIf(HarnessLoaders::torchSide);
            } else {
                torchVersions = torch.versions();
                say("pytorch side: " + python + ": " + torchVersions);
                peers(script, loadersRun, notes);
            }
        }
        // The preprocessed dataset: raw shards for Stoke, the same bytes as .raw files for PyTorch.
        Path rawShards = dataDir().resolve("raw224-" + jpegRoot.getFileName() + "-shards");
        Path rawFiles = dataDir().resolve("raw224-" + jpegRoot.getFileName());
        if (datasets.contains("raw")) {
            long t = System.nanoTime();
            RawTensors.Prepared r = RawTensors.ensure(jpegRoot, rawShards, rawFiles, cores);
            say(String.format(
                    Locale.ROOT,
                    "preprocessed dataset: %d samples of 224x224x3 uint8 as raw shards in %s (%s) "
                            + "and as .raw files in %s (%s) (%.1f s)",
                    r.samples(),
                    rawShards,
                    r.packed() ? "packed" : "reused",
                    rawFiles,
                    r.filesMade() ? "written" : "reused",
                    (System.nanoTime() - t) / 1e9));
        }
        int datasetImages = ImageFolder.scan(jpegRoot).size();
        List<PixelDifference> differences = pixelDifferences(jpegRoot, datasetImages, loadersRun, script, notes);
        // Written now as well as at the end, so that --report-only can redraw a sweep cut short.
        new ReportInfo(
                        machine,
                        cores,
                        warmupImages,
                        conditions(p, jpegRoot, datasetImages, cores, torchVersions, null),
                        notes,
                        differences)
                .write(out);

        List<RunKey> keys = new ArrayList<>();
        for (String d : datasets) {
            for (int b : p.batchSizes()) {
                if (b > datasetImages) {
                    say("batch " + b + " left out: the dataset has only " + datasetImages + " images");
                    continue;
                }
                for (int w : p.workers()) {
                    for (double m : noModel ? List.of(0.0) : List.of(0.0, b * modelMsPerImage)) {
                        for (String s : starts) {
                            for (String l : loadersRun) {
                                if (HarnessLoaders.runsOn(l, d)) {
                                    keys.add(new RunKey(l, d, b, w, m, s));
                                }
                            }
                        }
                    }
                }
            }
        }
        List<RunResult> results = new ArrayList<>();
        int total = keys.size() * p.repeats();
        int done = 0;
        for (int r = 0; r < p.repeats(); r++) {
            for (int i = 0; i < keys.size(); i++) {
                // Odd repeats run the sweep backwards, so neither loader always runs first after the other.
                RunKey k = keys.get(r % 2 == 0 ? i : keys.size() - 1 - i);
                Path root = k.dataset().equals("jpeg")
                        ? jpegRoot
                        : k.loader().equals(SummaryReport.STOKE) ? rawShards : rawFiles;
                RunResult res;
                try {
                    warmPageCache(root);
                    res = runOne(k, r, root, script);
                } catch (IOException | RuntimeException e) {
                    // One broken run (a file gone, a process that cannot start) must not lose the sweep.
                    res = RunResult.failed(k, r, e.toString());
                }
                results.add(res);
                done++;
                double elapsed = (System.nanoTime() - harnessStart) / 1e9;
                say(String.format(
                        Locale.ROOT,
                        "[%d/%d] %s repeat %d: %s  (%.0f s so far)",
                        done,
                        total,
                        k.label(),
                        r + 1,
                        res.ok()
                                ? String.format(
                                        Locale.ROOT,
                                        "%.0f images/s, first batch %.0f ms (%.0f ms from process "
                                                + "start), peak PSS %.0f MB",
                                        res.imagesPerSecond(),
                                        res.timeToFirstBatchS() * 1e3,
                                        res.processStartToFirstBatchS() * 1e3,
                                        res.peakPssBytes() / 1e6)
                                : "FAILED: " + res.error(),
                        elapsed));
                ResultFiles.write(out, results);
            }
        }
        double minutes = (System.nanoTime() - harnessStart) / 60e9;
        ReportInfo info = new ReportInfo(
                machine,
                cores,
                warmupImages,
                conditions(p, jpegRoot, datasetImages, cores, torchVersions, minutes),
                notes,
                differences);
        // Kept beside the CSVs so that --report-only can redraw the summary as it was.
        info.write(out);
        // Drawn from the files, as --report-only draws them: the summary is what the files hold.
        int plots = render(ResultFiles.read(out), info);
        long failed = results.stream().filter(x -> !x.ok()).count();
        say(String.format(
                Locale.ROOT,
                "done in %.1f min: %d runs (%d failed); %s, %s, %s and %d plots in %s",
                minutes,
                results.size(),
                failed,
                "batches.csv",
                "runs.csv",
                "summary.md",
                plots,
                out));
        System.out.println(Files.readString(out.resolve("summary.md")));
        return failed == 0 ? 0 : Main.EXIT_FAILED;
    }

    private int render(List<RunResult> results, ReportInfo info) throws IOException {
        List<Aggregate> aggs = Aggregate.of(results);
        Files.writeString(out.resolve("summary.md"), SummaryReport.render(aggs, info));
        Files.createDirectories(out.resolve("plots"));
        return Plots.draw(out.resolve("plots"), results, aggs, info).size();
    }

    private int report() throws IOException {
        List<RunResult> results = ResultFiles.read(out);
        int plots = render(results, ReportInfo.read(out));
        System.err.printf(
                Locale.ROOT,
                "harness: %d runs read from %s; summary.md and %d plots redrawn%n",
                results.size(),
                out,
                plots);
        return 0;
    }

    /** {@code minutes}: how long the sweep took, or null while it runs (the conditions then say it did not finish). */
    private List<String> conditions(Profile p, Path jpegRoot, int n, int cores, String torchVersions, Double minutes) {
        List<String> c = new ArrayList<>();
        if (spec != null) {
            // The whole command line, less the sub-command's own name ahead of its options.
            List<String> args = spec.commandLine().getParseResult().originalArgs();
            int from = args.indexOf(spec.name()) + 1;
            c.add("Regenerate: `./stoke harness " + String.join(" ", args.subList(from, args.size())) + "`.");
        }
        c.add(String.format(
                Locale.ROOT,
                "Profile `%s`: batch sizes %s, workers %s, model time %s, datasets %s, starts %s, "
                        + "%d repeat%s; %s.",
                profile,
                p.batchSizes(),
                p.workers(),
                noModel
                        ? "0"
                        : String.format(
                                Locale.ROOT,
                                "0 and batch x %.1f ms (the model the bottleneck: %.0f images/s)",
                                modelMsPerImage,
                                1000 / modelMsPerImage),
                datasets,
                starts,
                p.repeats(),
                p.repeats() == 1 ? "" : "s",
                minutes == null
                        ? "the sweep did not finish"
                        : String.format(Locale.ROOT, "the sweep took %.1f min", minutes)));
        c.add(String.format(
                Locale.ROOT,
                "JPEG dataset: %d ImageNet-like files in %s; the preprocessed (raw) dataset holds the "
                        + "same images resized and cropped once, Resize 256 + CenterCrop 224 as Stoke's JPEG runs deliver them "
                        + "(`stoke pack --format raw`), 224x224x3 uint8: as WebDataset shards of .npy samples for Stoke, and "
                        + "the same bytes as headerless .raw files for PyTorch's loaders.",
                n,
                jpegRoot));
        c.add(
                transform.equals("train")
                        ? "Every loader reads the same files in dataset order and delivers uint8 [n, 224, 224, 3] batches of the "
                                + "training transform, RandomResizedCrop(224) (scale 0.08-1, ratio 3/4-4/3) + RandomHorizontalFlip(): "
                                + "torchvision's on the PyTorch side, Stoke's (the same algorithm, its own random stream) on its own; "
                                + "last partial batch kept."
                        : "Every loader reads the same files and delivers the same batches: uint8 [n, 224, 224, 3] "
                                + "(Resize 256 + CenterCrop 224), in dataset order, last partial batch kept.");
        c.add(String.format(
                Locale.ROOT,
                "Same cores: each run is one process tree on the whole machine (%d cores), nothing "
                        + "pinned, runs one at a time. 'workers' is Stoke's decoding threads, DataLoader's worker processes "
                        + "and torchdata.nodes' mapper threads.",
                cores));
        c.add(
                "Warm page cache for both: the harness reads every file of the dataset once right before each run (on the "
                        + "raw dataset, the form that run's loader reads).");
        c.add(timing());
        c.add("The consumer waits for each batch (that wait is the per-batch load time), touches it, then sleeps the "
                + "simulated model time (a model on an accelerator leaves the CPU to the loader), the same in both.");
        String crop = transform.equals("train")
                ? "RandomResizedCrop(224), RandomHorizontalFlip()"
                : "Resize(256), CenterCrop(224)";
        c.add("PyTorch (PIL), loader `pytorch`: torchvision ImageFolder + PIL, " + crop + ", PILToTensor, permute to "
                + "HWC; persistent_workers=True, pin_memory=False, shuffle off (PyTorch's default prefetch: 2 batches a "
                + "worker). PyTorch (decode_jpeg + v2), loader `pytorch-tensor`, torch's fastest CPU path (the recipe's "
                + "`--backend tensor --use-v2`): the same DataLoader, ImageFolder's loader torchvision.io.decode_image "
                + "(libjpeg-turbo, RGB), then " + crop
                + " of torchvision.transforms.v2 on uint8 tensors (antialiased), "
                + "permute to HWC; JPEG runs only (on the raw dataset it is the PIL path's runs again). torchdata.nodes, "
                + "loader `torchdata-nodes`: the same samples as pytorch-tensor, mapped in order by a ParallelMapper of "
                + "'workers' threads, then Batcher, default_collate and Prefetcher(2) in the calling process. "
                + "Stoke: DCT scaling pow2 (its default), " + stokeSlots + " ring slots. "
                + "Raw dataset: PyTorch reads each .raw file with numpy.fromfile in a Dataset; Stoke reads the raw "
                + "shards through the same Loader (memory-mapped; each sample copied into the batch, no decode, "
                + "no resize)."
                + (torchVersions != null ? " Versions: " + torchVersions + "." : ""));
        c.add(String.format(
                Locale.ROOT,
                "Pixels: before the sweep, each loader's first batch of the evaluation transform (Resize 256 + "
                        + "CenterCrop 224, uint8, dataset order, %d images, 1 worker) is compared with torchvision's PIL "
                        + "path's on the same images: the mean and largest absolute difference of a channel value.",
                Math.min(PIXEL_BATCH, n)));
        c.add(String.format(
                Locale.ROOT,
                "Memory and CPU: every %d ms the harness reads /proc for the run's process and all its "
                        + "descendants (VmRSS, Pss from smaps_rollup, utime + stime).",
                sampleMs));
        return c;
    }

    /** The conditions' bullet on the clock: what is timed, and which runs are cold and which warm. */
    private String timing() {
        StringBuilder t =
                new StringBuilder("Timing starts before the loader is created (Stoke's build(), PyTorch's iter(), "
                        + "which starts its workers) and ends after the last batch; images/s = images / that span. Python's and "
                        + "torch's imports come before it, as does the JVM's start.");
        if (starts.contains(RunKey.COLD)) {
            t.append(
                    " **Cold** runs (start `cold`) are a fresh process with nothing untimed before the clock, as a user "
                            + "starts a job: Stoke's kernels run interpreted until the JIT compiles them, PyTorch's worker processes "
                            + "start within the timed span.");
        }
        if (starts.contains(RunKey.WARM)) {
            t.append(String.format(
                    Locale.ROOT,
                    " **Warm** runs (start `warm`, the steady state) first take %d images "
                            + "untimed in the same process: Stoke through a loader of the same settings (batches of at most 64), "
                            + "closed before the timed one is built, which leaves its kernels compiled; PyTorch through the same "
                            + "DataLoader in whole epochs (so that no batch is in flight when the clock starts), whose persistent "
                            + "workers then serve the timed epoch from a new iter().",
                    warmupImages));
        }
        t.append(" Process start → first batch is timed by the harness, from starting the run's process to the process "
                + "receiving its first batch (a warm run's first untimed one).");
        return t.toString();
    }

    private Path jpegDataset(Profile p) {
        if (dataset != null) {
            if (!Files.isDirectory(dataset)) {
                throw new IllegalArgumentException("--dataset " + dataset + " is not a folder");
            }
            return dataset;
        }
        // The harness's own copy, not the demo's cache: a sweep must not lose its files halfway
        // because something else regenerated or cleaned a shared cache.
        Path dir = dataDir()
                .resolve(String.format(
                        Locale.ROOT,
                        "jpeg-%d-%s-seed%d-v%d",
                        p.images(),
                        photos == null ? "procedural" : "photos",
                        DemoSample.SEED,
                        SyntheticImageNet.GENERATOR_VERSION));
        SyntheticImageNet.Summary s = SyntheticImageNet.ensure(
                dir,
                new SyntheticImageNet.Options(
                        p.images(), Math.min(DemoSample.CLASSES, p.images()), DemoSample.SEED, photos));
        say("JPEG dataset: " + dir + "\n" + s.format());
        return dir;
    }

    private Path dataDir() {
        return dataDir != null ? dataDir : out.resolve("data");
    }

    /**
     * The command that starts a Stoke run as {@code ./stoke} starts Stoke: this JVM's {@code -XX}
     * options (its AOT cache and JIT tiers), the heap capped (the pixels are off-heap) and, when
     * this process runs from Stoke's jar, {@code -jar} that jar, whose manifest opens what Stoke
     * needs. Opening it with {@code --add-exports} instead would turn the JVM's archived module
     * graph off, and with it the AOT cache ("AOT cache has aot-linked classes. It cannot be used
     * when archived full module graph is not used"): the cold runs would time a JVM without it.
     * From a class path (tests), the options go on the command line and the AOT cache is left out.
     */
    static List<String> stokeJava() {
        return stokeJava(
                ProcessHandle.current()
                        .info()
                        .command()
                        .orElse(Path.of(System.getProperty("java.home"), "bin", "java")
                                .toString()),
                System.getProperty("java.class.path"),
                ManagementFactory.getRuntimeMXBean().getInputArguments());
    }

    /** {@link #stokeJava()} for the JVM at {@code launcher} started with {@code jvmArgs} on {@code classPath}. */
    static List<String> stokeJava(String launcher, String classPath, List<String> jvmArgs) {
        boolean fromJar = classPath.endsWith(".jar") && !classPath.contains(File.pathSeparator);
        List<String> cmd = new ArrayList<>();
        cmd.add(launcher);
        jvmArgs.stream()
                .filter(a -> a.startsWith("-XX:") && (fromJar || !a.startsWith("-XX:AOTCache")))
                .forEach(cmd::add);
        cmd.add("-Xmx384m");
        if (fromJar) {
            cmd.addAll(List.of("-jar", classPath));
        } else {
            cmd.addAll(List.of(
                    "--enable-native-access=ALL-UNNAMED",
                    "--add-exports",
                    "java.base/jdk.internal.misc=ALL-UNNAMED",
                    "-cp",
                    classPath,
                    HarnessMain.class.getName()));
        }
        return cmd;
    }

    /**
     * The command that starts one loader's process on {@code root} with the options every run
     * gives: Stoke's {@code harness-run} in a JVM started as {@link #stokeJava()} starts it, or
     * {@code torch_loader.py --loader LOADER} in {@link #python}. A caller adds its own options.
     */
    private List<String> loaderCommand(
            String loader,
            Path root,
            Path script,
            String dataset,
            int batchSize,
            int workers,
            String transform,
            Path json) {
        List<String> cmd = new ArrayList<>();
        if (loader.equals(HarnessLoaders.STOKE)) {
            cmd.addAll(stokeJava());
            cmd.addAll(List.of("harness-run", root.toString()));
        } else {
            cmd.addAll(List.of(python.toString(), script.toString(), root.toString(), "--loader", loader));
        }
        cmd.addAll(List.of(
                "--dataset",
                dataset,
                "--batch-size",
                Integer.toString(batchSize),
                "--workers",
                Integer.toString(workers),
                "--transform",
                transform,
                "--json",
                json.toString()));
        return cmd;
    }

    /** Kills a run's process and everything it started, and waits for it: a run past --run-timeout-s. */
    private static void kill(Process proc) throws InterruptedException {
        proc.descendants().forEach(ProcessHandle::destroyForcibly);
        proc.destroyForcibly();
        proc.waitFor();
    }

    private RunResult runOne(RunKey k, int repeat, Path root, Path script) throws IOException, InterruptedException {
        String label = k.label() + "-r" + (repeat + 1);
        Path json = out.resolve("runs").resolve(label + ".json");
        Files.deleteIfExists(json);
        int warmup = k.start().equals(RunKey.WARM) ? warmupImages : 0;
        List<String> cmd =
                loaderCommand(k.loader(), root, script, k.dataset(), k.batchSize(), k.workers(), transform, json);
        cmd.addAll(List.of("--model-ms", Double.toString(k.modelMs()), "--warmup-images", Integer.toString(warmup)));
        if (k.loader().equals(HarnessLoaders.STOKE)) {
            cmd.addAll(List.of("--slots", Integer.toString(stokeSlots)));
        }
        Path logFile = out.resolve("logs").resolve(label + ".log");
        double childCpuBefore = ProcessTreeMonitor.childrenCpuSeconds();
        // From here to the child's first batch is what a user waits for: JVM start, or Python's
        // and torch's imports, then the loader's start and its first batch.
        long spawned = System.nanoTime();
        Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        double[] window = {Double.NaN, Double.NaN};
        long[] firstBatchAt = {0};
        try (ProcessTreeMonitor mon = new ProcessTreeMonitor(proc.pid(), sampleMs);
                Writer lw = Files.newBufferedWriter(logFile, StandardCharsets.UTF_8)) {
            lw.write(String.join(" ", cmd) + "\n");
            Thread reader = Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader br =
                        new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = br.readLine()) != null) {
                        if (line.equals(StokeRunCommand.FIRST)) {
                            firstBatchAt[0] = System.nanoTime();
                        } else if (line.equals(StokeRunCommand.BEGIN)) {
                            window[0] = mon.sample();
                        } else if (line.equals(StokeRunCommand.END)) {
                            window[1] = mon.sample();
                        }
                        synchronized (lw) {
                            lw.write(line + "\n");
                        }
                    }
                } catch (IOException e) {
                    // The process is gone; what it printed so far is in the log.
                }
            });
            if (!proc.waitFor(runTimeoutS, TimeUnit.SECONDS)) {
                kill(proc);
                reader.join(5000);
                return RunResult.failed(k, repeat, "timed out after " + runTimeoutS + " s; log: " + logFile);
            }
            reader.join(5000);
            double cpuTotal = ProcessTreeMonitor.childrenCpuSeconds() - childCpuBefore;
            if (proc.exitValue() != 0 || !Files.isRegularFile(json)) {
                return RunResult.failed(k, repeat, "exit code " + proc.exitValue() + "; log: " + logFile);
            }
            RunFigures f = RunFigures.read(json);
            double processStartToFirstBatchS = firstBatchAt[0] == 0 ? Double.NaN : (firstBatchAt[0] - spawned) / 1e9;
            return new RunResult(
                    k,
                    repeat,
                    f.images(),
                    f.elapsedS(),
                    f.waitNs(),
                    processStartToFirstBatchS,
                    mon.peakRssBytes(),
                    mon.peakPssBytes(),
                    mon.sumHwmBytes(),
                    window[1] - window[0],
                    cpuTotal,
                    null);
        }
    }

    /**
     * Today's torch where it is installed: the venv that {@code clients/python/stacks/torch214.sh}
     * makes (torch 2.14.1, torchvision 0.29.1, Pillow 12.3, torchdata), else Debian's Python.
     */
    static Path defaultPython() {
        String cache = System.getenv("XDG_CACHE_HOME");
        Path venv = (cache != null && !cache.isEmpty()
                        ? Path.of(cache)
                        : Path.of(System.getProperty("user.home"), ".cache"))
                .resolve("stoke/torch214-venv/bin/python");
        return Files.isExecutable(venv) ? venv : Path.of("/usr/bin/python3");
    }

    /**
     * Leaves out, each with a note, the peer loaders this Python cannot import, and names the peers
     * the harness has no loader for.
     */
    private void peers(Path script, List<String> loadersRun, List<String> notes)
            throws IOException, InterruptedException {
        for (TorchScript.Peer peer : TorchScript.peers(python, script)) {
            String loader = HarnessLoaders.PEER_LOADER.get(peer.module());
            String why = null;
            if (peer.version() == null) {
                if (loader == null || loadersRun.remove(loader)) {
                    why = (loader != null ? loader : peer.module()) + " left out: " + peer.missing();
                }
            } else if (loader == null) {
                why = peer.module() + " " + peer.version()
                        + " is importable, but the harness has no loader for it yet: not timed";
            }
            if (why != null) {
                say(why);
                notes.add(why);
            }
        }
    }

    /**
     * Each loader's first batch of the evaluation transform (Resize 256 + CenterCrop 224), in
     * dataset order, against torchvision's PIL path's on the same images: measured once, before
     * the sweep, whatever its transform (random crops cannot be compared). Nothing when the PIL
     * path cannot run here, which the notes then say.
     */
    private List<PixelDifference> pixelDifferences(
            Path jpegRoot, int datasetImages, List<String> loadersRun, Path script, List<String> notes)
            throws IOException, InterruptedException {
        if (!loadersRun.contains(HarnessLoaders.PYTORCH)) {
            if (loaders.contains(HarnessLoaders.PYTORCH)) {
                return List.of(); // PyTorch could not run here, which a note already says
            }
            String why = "Pixel differences not measured: they are taken against torchvision's PIL path, "
                    + "and --loaders leaves out pytorch.";
            say(why);
            notes.add(why);
            return List.of();
        }
        int batch = Math.min(PIXEL_BATCH, datasetImages);
        Path dir = Files.createDirectories(out.resolve("first-batch"));
        Map<String, byte[]> dumps = new LinkedHashMap<>();
        Map<String, String> errors = new LinkedHashMap<>();
        for (String l : loadersRun) {
            Path file = dir.resolve(l + ".u8");
            Files.deleteIfExists(file);
            List<String> cmd = loaderCommand(l, jpegRoot, script, "jpeg", batch, 1, "eval", dir.resolve(l + ".json"));
            cmd.addAll(List.of("--dump-first", file.toString()));
            Path logFile = dir.resolve(l + ".log");
            Process proc = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(logFile.toFile())
                    .start();
            if (!proc.waitFor(runTimeoutS, TimeUnit.SECONDS)) {
                kill(proc);
                errors.put(l, "timed out after " + runTimeoutS + " s; log: " + logFile);
            } else if (proc.exitValue() != 0 || !Files.isRegularFile(file)) {
                errors.put(l, "exit code " + proc.exitValue() + "; log: " + logFile);
            } else {
                dumps.put(l, Files.readAllBytes(file));
            }
        }
        byte[] reference = dumps.get(HarnessLoaders.PYTORCH);
        List<PixelDifference> differences = new ArrayList<>();
        for (String l : loadersRun) {
            PixelDifference d = errors.containsKey(l)
                    ? PixelDifference.failed(l, errors.get(l))
                    : reference == null
                            ? PixelDifference.failed(
                                    l,
                                    "torchvision's PIL path gave no first batch: " + errors.get(HarnessLoaders.PYTORCH))
                            : PixelDifference.of(l, reference, dumps.get(l), PIXEL_SAMPLE_BYTES);
            say(
                    d.ok()
                            ? String.format(
                                    Locale.ROOT,
                                    "pixels of %s's first batch (%d images) against torchvision's PIL path: mean %.3f, "
                                            + "largest %d",
                                    l,
                                    d.images(),
                                    d.meanAbs(),
                                    d.maxAbs())
                            : "pixels of " + l + " not compared: " + d.error());
            differences.add(d);
        }
        return differences;
    }

    /** The first batch compared for pixel differences, or the whole dataset when smaller. */
    static final int PIXEL_BATCH = 32;

    private static final int PIXEL_SAMPLE_BYTES = 224 * 224 * 3;

    private static Path findScript() {
        List<Path> starts = new ArrayList<>();
        String root = System.getProperty("stoke.root");
        if (root != null) {
            starts.add(Path.of(root));
        }
        try {
            starts.add(Path.of(HarnessCommand.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .toURI()));
        } catch (Exception e) {
            // No code source (unusual class loader): the working directory is the other guess.
        }
        starts.add(Path.of("").toAbsolutePath());
        for (Path s : starts) {
            for (Path d = s; d != null; d = d.getParent()) {
                Path f = d.resolve("benchmarks/python/torch_loader.py");
                if (Files.isRegularFile(f)) {
                    return f;
                }
            }
        }
        return null;
    }

    /** Reads every file under {@code root} once, so the run finds them in the page cache. */
    private static void warmPageCache(Path root) throws IOException {
        byte[] buf = new byte[1 << 20];
        try (Stream<Path> s = Files.walk(root)) {
            for (Path f : s.filter(Files::isRegularFile).toList()) {
                try (var in = Files.newInputStream(f)) {
                    while (in.read(buf) > 0) {
                        // reading is the point
                    }
                }
            }
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }

    private void say(String s) {
        System.err.println("harness: " + s);
        try {
            log.write(s + "\n");
            log.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write harness.log in " + out, e);
        }
    }
}
