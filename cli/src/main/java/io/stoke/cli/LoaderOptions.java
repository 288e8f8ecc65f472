package io.stoke.cli;

import io.stoke.loader.Loader;
import io.stoke.loader.Workers;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Every {@link Loader.Builder} setting as a command-line option, spelled as PyTorch users expect:
 * the one option set of every command that drives a loader ({@code demo}, {@code bench},
 * {@code serve}). Each option has one default, the same in every command; adding a builder
 * setting means adding it here, and every command has it.
 */
public final class LoaderOptions {
    @Option(
            names = "--workers",
            paramLabel = "N|auto",
            description = {
                "Decoding threads: auto (the default) runs as many as the consumer needs, chosen while it runs from",
                "its measured wait and the workers' CPU, at most --max-workers; N runs exactly N."
            })
    String workers = "auto";

    @Option(
            names = "--max-workers",
            paramLabel = "N",
            description = {
                "With --workers auto, the most it may run (default: the cores this process may use);",
                "for tune, the most it considers (default: twice the cores)."
            })
    int maxWorkers;

    @Option(
            names = "--worker-nice",
            paramLabel = "N",
            description = {
                "Nice value of the decoding threads, 0-19 (default: ${DEFAULT-VALUE}, the process's priority):",
                "a consumer on the same cores (a model) then runs first and the workers decode on what it leaves."
            })
    int workerNice = 0;

    @Option(names = "--batch-size", paramLabel = "N", description = "Samples per batch (default: ${DEFAULT-VALUE}).")
    int batchSize = 256;

    @Option(
            names = "--slots",
            paramLabel = "N",
            description =
                    "Ring slots: batches decoded ahead plus those the consumer holds (default: ${DEFAULT-VALUE}).")
    int slots = 4;

    @Option(
            names = "--epochs",
            paramLabel = "N",
            description = "Epochs to run; 0 = until stopped (default: ${DEFAULT-VALUE}).")
    long epochs = 1;

    @Option(
            names = "--start-epoch",
            paramLabel = "E",
            description =
                    "Number of the first epoch, to resume a run: epoch E's order depends only on E (default: ${DEFAULT-VALUE}).")
    long startEpoch;

    @Option(
            names = "--start-batch",
            paramLabel = "K",
            description = {
                "First batch of the first epoch, to resume mid-epoch: batch K of epoch E depends only on",
                "(seed, E, K, rank, world size), so the rest of the epoch is what an uninterrupted run gives (default: ${DEFAULT-VALUE})."
            })
    int startBatch;

    @Option(
            names = "--cache-dir",
            paramLabel = "DIR",
            description = {
                "Keep a lossless restart-marker copy of each original JPEG in DIR (a folder's or list's files,",
                "or the members of tar shards or Parquet, local or remote; the same pixels), made by one",
                "low-priority thread from the images read, and read the copies from then on: from the next",
                "epoch, or the next run, the training crop decodes only its part of every JPEG. Safe to share",
                "between processes; a changed file or shard is copied again."
            })
    Path cacheDir;

    @Option(
            names = "--cache-size",
            paramLabel = "BYTES",
            description = "The most bytes --cache-dir holds; past it the rest is read from the originals, said once"
                    + " (default: ${DEFAULT-VALUE}).")
    String cacheSize = "64G";

    @Option(
            names = "--cache-shared-with",
            paramLabel = "GROUP",
            description = {
                "Share --cache-dir and --shard-cache-dir with the members of GROUP on purpose: a folder Stoke makes",
                "is GROUP's (mode 2770) and its files 0640, and another member's folder is used where it is GROUP's",
                "and no one else can write it. Without it each folder is yours alone (0700, files 0600), and a",
                "folder that another user owns, or that others can write, is refused (docs/security.md)."
            })
    String cacheSharedWith;

    /** Opened once per process, for every loader these options build. */
    private RestartCache cache;

    @Option(
            names = "--start-state",
            paramLabel = "FILE",
            description = {
                "Resume from saved loader states (Python's state_dict() or Java's Loader.state() as JSON: one",
                "state, or a list of every rank's), on this run's world, which may have other ranks and batch",
                "size: what the saved ranks left of their epoch is split over this one. Instead of --start-epoch",
                "and --start-batch."
            })
    Path startState;

    @Option(
            names = "--start-cuts",
            paramLabel = "JSON",
            description = {
                "The low-level form of --start-state: epoch --start-epoch is what these cuts left of it, a list",
                "[{\"world_size\": W, \"taken\": [samples each rank took]}, ...], oldest first."
            })
    String startCuts;

    @Option(
            names = "--shuffle",
            negatable = true,
            description = "Shuffle each epoch with --seed (default: off, dataset order).")
    boolean shuffle;

    @Option(names = "--seed", paramLabel = "S", description = "Shuffle seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(
            names = "--shuffle-window",
            paramLabel = "SHARDS",
            description = {
                "Tar shards: shuffle within windows of SHARDS shards (shard order shuffled per epoch, then the",
                "samples of each window) instead of over every sample; 0 = global. Default: global for local shards,",
                "" + Datasets.DEFAULT_REMOTE_WINDOW + " for remote ones (a window must fit in --shard-cache)."
            })
    Integer shuffleWindow;

    @Option(
            names = "--shard-cache",
            paramLabel = "SIZE",
            description = {
                "Remote shards and Parquet row groups: bytes of whole shards (loaded row groups) held at once (e.g. 4G,",
                "512M); at least twice the largest, and a shuffle window's worth so that each is fetched (loaded) once an",
                "epoch (default: ${DEFAULT-VALUE})."
            })
    String shardCache = "4G";

    @Mixin
    ColumnOptions columnOptions = new ColumnOptions();

    @Option(
            names = "--shard-cache-dir",
            paramLabel = "DIR",
            description =
                    "Remote shards: keep the cache's shards as files in DIR (mapped) rather than in memory (default: memory).")
    Path shardCacheDir;

    @Option(names = "--drop-last", description = "Drop each epoch's last partial batch of this rank (default: kept).")
    boolean dropLast;

    @Option(
            names = "--rank",
            paramLabel = "R",
            description =
                    "This process's shard: every --world-size-th sample from R of each epoch's order (default: ${DEFAULT-VALUE}).")
    int rank;

    @Option(
            names = "--world-size",
            paramLabel = "W",
            description = "Number of shards, each of the same size (see --shard-tail) (default: ${DEFAULT-VALUE}).")
    int worldSize = 1;

    @Option(
            names = "--shard-tail",
            paramLabel = "MODE",
            description = {
                "When N samples do not split evenly over W ranks: pad gives every rank ceil(N/W), repeating",
                "samples from the start of the epoch's order (PyTorch's DistributedSampler); drop gives every rank",
                "floor(N/W), leaving up to W-1 out. Either way every rank takes the same number of steps",
                "(${COMPLETION-CANDIDATES}; default: ${DEFAULT-VALUE})."
            })
    Choices.Tail shardTail = Choices.Tail.pad;

    @Option(
            names = "--transform",
            paramLabel = "KIND",
            description =
                    "eval: Resize(--resize) + CenterCrop(--crop); train: RandomResizedCrop(--crop, --scale, --ratio) + "
                            + "RandomHorizontalFlip(--flip), random per sample, epoch and --seed (default: ${DEFAULT-VALUE}).")
    Choices.Transform transform = Choices.Transform.eval;

    @Option(
            names = "--scale",
            paramLabel = "MIN,MAX",
            split = ",",
            description = "train: range of the crop's area as a fraction of the image's (default: 0.08,1.0).")
    double[] scale = {0.08, 1.0};

    @Option(
            names = "--ratio",
            paramLabel = "MIN,MAX",
            split = ",",
            description = "train: range of the crop's width / height, drawn log-uniformly (default: 0.75,1.3333).")
    double[] ratio = {3.0 / 4.0, 4.0 / 3.0};

    @Option(
            names = "--flip",
            paramLabel = "P",
            description = "train: probability of a horizontal flip (default: ${DEFAULT-VALUE}).")
    double flip = 0.5;

    @Option(
            names = "--resize",
            paramLabel = "S",
            description =
                    "Resize the shorter side to S with an antialiased bilinear filter, as torchvision's Resize(S) (default: ${DEFAULT-VALUE}).")
    int resize = 256;

    @Option(
            names = "--crop",
            paramLabel = "C",
            description = "Center crop C x C, as torchvision's CenterCrop(C) (default: ${DEFAULT-VALUE}).")
    int crop = 224;

    @Option(
            names = "--output",
            paramLabel = "TYPE",
            description =
                    "uint8: [n,C,C,3] bytes, channels last; float32: [n,3,C,C], (x / 255 - --mean) / --std (default: ${DEFAULT-VALUE}).")
    Choices.Output output = Choices.Output.uint8;

    @Option(
            names = "--mean",
            paramLabel = "R,G,B",
            split = ",",
            description =
                    "float32: the per-channel mean of torchvision's Normalize(mean, std), on a 0-1 scale (default: ImageNet's, 0.485,0.456,0.406).")
    double[] mean = {0.485, 0.456, 0.406};

    @Option(
            names = "--std",
            paramLabel = "R,G,B",
            split = ",",
            description =
                    "float32: the per-channel std of Normalize(mean, std); --mean 0,0,0 --std 1,1,1 is ToTensor() alone (default: ImageNet's, 0.229,0.224,0.225).")
    double[] std = {0.229, 0.224, 0.225};

    @Option(
            names = "--dct-scaling",
            paramLabel = "MODE",
            description =
                    "Let libjpeg-turbo decode at a smaller scale when the image is far larger than the resize target: "
                            + "none (pixels identical to torchvision), pow2 (1/2, 1/4, 1/8), all (any M/8) (default: ${DEFAULT-VALUE}).")
    Choices.DctScaling dctScaling = Choices.DctScaling.pow2;

    @Option(
            names = "--max-pixels",
            paramLabel = "N",
            description =
                    "Refuse JPEGs whose header claims more than N pixels (decompression bombs) (default: ${DEFAULT-VALUE}).")
    long maxPixels = 36_000_000L;

    @Option(
            names = "--on-error",
            paramLabel = "POLICY",
            description =
                    "fail: a batch holding an undecodable file fails (exit code 1); skip: zero the sample, report it, "
                            + "go on. Under both, an epoch in which nothing decodes ends the run (exit code 1) (default: ${DEFAULT-VALUE}).")
    Choices.OnError onError = Choices.OnError.fail;

    /**
     * The dataset {@code data} names (a folder, a list file, tar shards: see {@link Datasets}), damaged
     * shards handled under {@code --on-error}, warnings on stderr. Close it when done: shards are mapped.
     */
    Dataset open(String data) {
        Dataset dataset = Datasets.openLocalOrUrl(
                data,
                new UrlDatasetProvider.ShardCache(ByteSize.parse(shardCache), shardCacheDir, folderAccess()),
                columns());
        return Datasets.checked(dataset, data, policy(), warning -> System.err.println("stoke: " + warning));
    }

    /** Who may use the cache folders: {@code --cache-shared-with}'s group, or this user alone. */
    FolderAccess folderAccess() {
        return folderAccess(cacheSharedWith);
    }

    /** {@code --cache-shared-with GROUP}'s access (null: this user alone); a bad name is one sentence. */
    static FolderAccess folderAccess(String group) {
        try {
            return FolderAccess.sharedWith(group);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--cache-shared-with: " + e.getMessage());
        }
    }

    /** The Parquet columns named by {@code --image-column}, {@code --label-column} and {@code --key-column}. */
    TableColumns columns() {
        return columnOptions.columns();
    }

    /** {@link #open(String)} under {@code --on-error fail}. */
    static Dataset openFailing(Path data) {
        return Datasets.openLocalChecked(
                data.toString(), ErrorPolicy.FAIL, warning -> System.err.println("stoke: " + warning));
    }

    TransformSpec transform() {
        if (mean.length != 3 || std.length != 3) {
            throw new IllegalArgumentException("--mean and --std take three numbers, R,G,B");
        }
        for (double s : std) {
            if (!(s > 0) || !Double.isFinite(s)) {
                throw new IllegalArgumentException("--std must be three positive numbers, not " + Arrays.toString(std));
            }
        }
        for (double m : mean) {
            if (!Double.isFinite(m)) {
                throw new IllegalArgumentException("--mean must be three finite numbers, not " + Arrays.toString(mean));
            }
        }
        float[] m = {(float) mean[0], (float) mean[1], (float) mean[2]};
        float[] sd = {(float) std[0], (float) std[1], (float) std[2]};
        TransformSpec spec = TransformSpec.defaults()
                .withOutput(output.value)
                .withDctScaling(dctScaling.value)
                .withMaxPixels(maxPixels)
                .withNormalization(m, sd);
        return switch (transform) {
            case eval -> spec.withResize(resize, crop);
            case train -> {
                if (scale.length != 2 || ratio.length != 2) {
                    throw new IllegalArgumentException("--scale and --ratio take two numbers, MIN,MAX");
                }
                yield spec.withTrain(crop, new RandomResizedCrop(scale[0], scale[1], ratio[0], ratio[1], flip));
            }
        };
    }

    ErrorPolicy policy() {
        return onError.value;
    }

    /** --workers and --max-workers; a bad value is one sentence. */
    Workers workers() {
        if (maxWorkers < 0) {
            throw new IllegalArgumentException("--max-workers must be positive, not " + maxWorkers);
        }
        try {
            return Workers.parse(workers, maxWorkers);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--workers must be a positive number or auto, not '" + workers + "'");
        }
    }

    /** The loader states in {@code file}, one or a list; an unreadable file is one sentence. */
    private static List<LoaderState> states(Path file) {
        try {
            return LoaderState.parse(Files.readString(file), "--start-state " + file);
        } catch (IOException e) {
            throw new IllegalArgumentException("--start-state " + file + ": cannot read it (" + e.getMessage() + ")");
        }
    }

    /**
     * The restart cache, opened at the first call. Its filler is a daemon thread: an exit or SIGTERM
     * lets it finish the entry in hand, so a clean end leaves no temporary file; one cut short by
     * kill -9 is removed by the next open.
     */
    private RestartCache cache() {
        if (cache == null) {
            RestartCache opened = RestartCache.open(
                    cacheDir, ByteSize.parse(cacheSize), folderAccess(), m -> System.err.println("stoke: " + m));
            Runtime.getRuntime().addShutdownHook(new Thread(opened::close, "stoke-cache-close"));
            cache = opened;
        }
        return cache;
    }

    /** A builder with every option applied; the caller may still set the ring. */
    Loader.Builder builder(Dataset dataset) {
        Loader.Builder builder = Loader.builder(dataset);
        if (shuffleWindow != null) {
            builder.shuffleWindow(shuffleWindow); // else Loader.Builder's default for this dataset
        }
        if (startState != null) {
            builder.resume(states(startState));
        }
        if (cacheDir != null) {
            builder.restartCache(cache());
        }
        return builder.workers(workers())
                .workerNice(workerNice)
                .batchSize(batchSize)
                .slots(slots)
                .epochs(epochs)
                .startEpoch(startEpoch)
                .startBatch(startBatch)
                .epochCuts(startCuts == null ? List.of() : LoaderState.parseCuts(startCuts, "--start-cuts"))
                .shuffle(shuffle)
                .seed(seed)
                .dropLast(dropLast)
                .partition(rank, worldSize)
                .partitionTail(shardTail.value)
                .transform(transform())
                .onError(policy());
    }
}
