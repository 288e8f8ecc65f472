package io.stoke.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.Loader;
import io.stoke.loader.Workers;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.sample.Sampler.PartitionTail;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.transform.RandomErasing;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The one hand-written mapping of {@link LoaderSettings} onto the loader: the dataset they open,
 * the {@link Loader.Builder} they configure (each option reaching the method the table's
 * {@code builder} names), the transform, the workers and the restart cache. Holds the restart
 * cache, opened once per process for every loader it builds, until {@link #close}.
 */
public final class LoaderSetup implements AutoCloseable {
    private final LoaderSettings settings;
    private RestartCache restartCache;
    private Thread restartCacheHook;

    public LoaderSetup(LoaderSettings settings) {
        this.settings = settings;
    }

    /** The settings this maps. */
    public LoaderSettings settings() {
        return settings;
    }

    /**
     * The dataset {@code data} names (a folder, a list file, tar shards, Parquet: see {@link Datasets}),
     * damaged shards handled under {@code --on-error}, warnings on stderr. Close it when done: shards are
     * mapped.
     */
    public Dataset open(String data) {
        Dataset dataset = Datasets.openLocalOrUrl(dataSpec(data), shardCache(), columns());
        return Datasets.checked(dataset, data, policy(), warning -> System.err.println("stoke: " + warning));
    }

    /** {@code data} opened under {@code --on-error fail}, with no other option. */
    public static Dataset openFailing(Path data) {
        return Datasets.openLocalChecked(
                data.toString(), ErrorPolicy.FAIL, warning -> System.err.println("stoke: " + warning));
    }

    /** The remote shard cache: {@code --shard-cache-size}, {@code --shard-cache-dir}. */
    public UrlDatasetProvider.ShardCache shardCache() {
        return new UrlDatasetProvider.ShardCache(
                settings.bytes("shard_cache_size"), settings.path("shard_cache_dir"), folderAccess());
    }

    /** Who may use the cache folders: {@code --cache-shared-with}'s group, or this user alone. */
    public FolderAccess folderAccess() {
        return folderAccess(settings.text("cache_shared_with"));
    }

    /** {@code --cache-shared-with GROUP}'s access (null: this user alone); a bad name is one sentence. */
    public static FolderAccess folderAccess(String group) {
        try {
            return FolderAccess.sharedWith(group);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--cache-shared-with: " + e.getMessage());
        }
    }

    /**
     * {@code data} with the table snapshot {@code --table-version} or {@code --as-of} names, as the
     * suffix a table's spec takes ({@code TABLE@v12}, {@code TABLE@2026-11-29T06:00:00Z}); {@code data}
     * itself when neither is given. Both, or either with a spec that has its own suffix, are refused.
     */
    public String dataSpec(String data) {
        Long version = settings.optionalLong("table_version");
        String asOf = settings.text("as_of");
        Path startState = settings.path("start_state");
        if (version == null && asOf == null && startState != null) {
            String saved = savedTable(startState);
            if (saved != null && sameTable(Datasets.withoutSnapshot(saved), data)) {
                version = Long.parseLong(saved.substring(saved.lastIndexOf("@v") + 2));
                System.err.println("stoke: --start-state was taken over " + saved + ": reading version " + version
                        + " of the table, as the saved run did");
            }
        }
        return dataSpec(data, version, asOf);
    }

    /**
     * The table snapshot ({@code "table": "TABLE@vN"}, as {@code stoke.DataLoader}'s {@code state_dict()}
     * writes it) the first state in {@code file} was taken over, or null when it names none.
     */
    private static String savedTable(Path file) {
        try {
            JsonNode root = new ObjectMapper().readTree(Files.readString(file));
            JsonNode first = root.isArray() && !root.isEmpty() ? root.get(0) : root;
            JsonNode table = first.get("table");
            return table != null && table.isTextual() && table.asText().matches(".*@v\\d+") ? table.asText() : null;
        } catch (IOException e) {
            throw new IllegalArgumentException("--start-state " + file + ": cannot read it (" + e.getMessage() + ")");
        }
    }

    /** Whether {@code saved} (a table's location, as its snapshot was named) is the table {@code data} names. */
    private static boolean sameTable(String saved, String data) {
        if (Datasets.isUrl(saved) || Datasets.isUrl(data)) {
            return trimSlash(saved).equals(trimSlash(data));
        }
        return Path.of(saved)
                .toAbsolutePath()
                .normalize()
                .equals(Path.of(data).toAbsolutePath().normalize());
    }

    private static String trimSlash(String s) {
        return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
    }

    /** {@link #dataSpec(String)} for a version and a time given some other way (null: not given). */
    public static String dataSpec(String data, Long tableVersion, String asOf) {
        if (tableVersion == null && asOf == null) {
            return data;
        }
        if (tableVersion != null && asOf != null) {
            throw new IllegalArgumentException("--table-version and --as-of both name a snapshot: give one");
        }
        if (!Datasets.isUrl(data) && Datasets.lakehouseFormat(data) == null) {
            throw new IllegalArgumentException((tableVersion != null ? "--table-version" : "--as-of")
                    + " names a snapshot of a Delta Lake or Apache Iceberg table, and " + data + " is neither"
                    + " (no _delta_log/ nor metadata/*.metadata.json in it)");
        }
        if (!Datasets.withoutSnapshot(data).equals(data)) {
            throw new IllegalArgumentException(data + " names its snapshot after '@' already: drop --table-version"
                    + " and --as-of, or the suffix");
        }
        if (asOf != null && (asOf.length() < 10 || !Character.isDigit(asOf.charAt(0)) || asOf.charAt(4) != '-')) {
            throw new IllegalArgumentException(
                    "--as-of " + asOf + " is not an ISO-8601 time, such as" + " 2026-11-29T06:00:00Z or 2026-11-29");
        }
        String spec = data.endsWith("/") && data.length() > 1 ? data.substring(0, data.length() - 1) : data;
        return spec + (tableVersion != null ? "@v" + tableVersion : "@" + asOf);
    }

    /** The Parquet columns named by {@code --image-column}, {@code --label-column} and {@code --key-column}. */
    public TableColumns columns() {
        return new TableColumns(
                settings.text("image_column"), settings.text("label_column"), settings.text("key_column"));
    }

    /** {@code --on-error}. */
    public ErrorPolicy policy() {
        return switch (settings.text("on_error")) {
            case "skip" -> ErrorPolicy.SKIP;
            default -> ErrorPolicy.FAIL;
        };
    }

    /** The transform: {@code --transform} and the options it reads. */
    public TransformSpec transform() {
        double[] mean = settings.numbers("mean");
        double[] std = settings.numbers("std");
        for (double s : std) {
            if (!(s > 0)) {
                throw new IllegalArgumentException("--std must be three positive numbers, not " + Arrays.toString(std));
            }
        }
        TransformSpec spec = TransformSpec.defaults()
                .withOutput(
                        settings.text("output").equals("float32")
                                ? TransformSpec.Output.FLOAT32_CHW
                                : TransformSpec.Output.UINT8_HWC)
                .withDctScaling(
                        switch (settings.text("dct_scaling")) {
                            case "none" -> TransformSpec.DctScaling.NONE;
                            case "all" -> TransformSpec.DctScaling.ALL;
                            default -> TransformSpec.DctScaling.POWERS_OF_TWO;
                        })
                .withMaxPixels(settings.longValue("max_pixels"))
                .withInterpolation(TransformSpec.Interpolation.valueOf(
                        settings.text("interpolation").toUpperCase(Locale.ROOT)))
                .withNormalization(floats(mean), floats(std));
        if (settings.decimal("erase") > 0) {
            spec = spec.withErasing(erasing());
        }
        int crop = settings.integer("crop");
        if (settings.text("transform").equals("train")) {
            double[] scale = settings.numbers("scale");
            double[] ratio = settings.numbers("ratio");
            return spec.withTrain(
                            crop,
                            new RandomResizedCrop(scale[0], scale[1], ratio[0], ratio[1], settings.decimal("flip")))
                    .withAugment(settings.text("augment"));
        }
        if (settings.text("augment") != null) {
            throw new IllegalArgumentException("--augment needs --transform train: torchvision's auto-augment"
                    + " policies run after RandomResizedCrop and the flip");
        }
        if (settings.text("transform").equals("squash")) {
            return spec.withSquash(settings.integer("resize"), crop);
        }
        return spec.withResize(settings.integer("resize"), crop);
    }

    /** {@code --erase} and the options it reads. */
    private RandomErasing erasing() {
        double[] scale = settings.numbers("erase_scale");
        double[] ratio = settings.numbers("erase_ratio");
        String text = settings.text("erase_value").strip();
        // "uint8:V": torchvision's RandomErasing on PILToTensor()'s uint8 image, V in uint8's units.
        boolean uint8 = text.regionMatches(true, 0, "uint8:", 0, 6);
        if (uint8) {
            text = text.substring(6).strip();
        }
        float[] value = null;
        if (!text.equalsIgnoreCase("random")) {
            String[] parts = text.split(",");
            value = new float[parts.length];
            try {
                for (int i = 0; i < parts.length; i++) {
                    value[i] = Float.parseFloat(parts[i].strip());
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "--erase-value takes one number, three (R,G,B) or random, each after uint8: for the uint8 "
                                + "image, not " + settings.text("erase_value"));
            }
        }
        return new RandomErasing(settings.decimal("erase"), scale[0], scale[1], ratio[0], ratio[1], value, uint8);
    }

    /** {@code --workers} and {@code --max-workers}. */
    public Workers workers() {
        Integer most = settings.optionalInteger("max_workers");
        return Workers.parse(settings.text("workers"), most == null ? 0 : most);
    }

    /** {@code --partition-tail}. */
    public PartitionTail partitionTail() {
        return settings.text("partition_tail").equals("drop") ? PartitionTail.DROP : PartitionTail.PAD;
    }

    /** A builder with every option applied; the caller may still set the ring. */
    public Loader.Builder builder(Dataset dataset) {
        Loader.Builder builder = Loader.builder(dataset);
        Integer window = settings.optionalInteger("shuffle_window");
        if (window != null) {
            builder.shuffleWindow(window); // else Loader.Builder's default for this dataset
        }
        Path startState = settings.path("start_state");
        if (startState != null) {
            builder.resume(states(startState));
        }
        if (settings.path("restart_cache_dir") != null) {
            builder.restartCache(restartCache());
        }
        Path feed = settings.path("order_feed");
        if (feed != null) {
            builder.orderFeed(feed);
        }
        String cuts = settings.text("start_cuts");
        return builder.workers(workers())
                .workerNice(settings.integer("worker_nice"))
                .batchSize(settings.integer("batch_size"))
                .slots(settings.integer("slots"))
                .epochs(settings.longValue("epochs"))
                .startEpoch(settings.longValue("start_epoch"))
                .startBatch(settings.integer("start_batch"))
                .epochCuts(cuts == null ? List.of() : LoaderState.parseCuts(cuts, "--start-cuts"))
                .shuffle(settings.flag("shuffle"))
                .seed(settings.longValue("seed"))
                .dropLast(settings.flag("drop_last"))
                .partition(settings.integer("rank"), settings.integer("world_size"))
                .partitionTail(partitionTail())
                .transform(transform())
                .onError(policy());
    }

    /**
     * The restart cache, opened at the first call. Its filler is a daemon thread: an exit or SIGTERM
     * lets it finish the entry in hand, so a clean end leaves no temporary file; one cut short by
     * kill -9 is removed by the next open.
     */
    private synchronized RestartCache restartCache() {
        if (restartCache == null) {
            RestartCache opened = RestartCache.open(
                    settings.path("restart_cache_dir"),
                    settings.bytes("restart_cache_size"),
                    folderAccess(),
                    m -> System.err.println("stoke: " + m));
            restartCacheHook = new Thread(opened::close, "stoke-cache-close");
            Runtime.getRuntime().addShutdownHook(restartCacheHook);
            restartCache = opened;
        }
        return restartCache;
    }

    /**
     * Stops the restart cache's filler, if one was opened, after the entry in hand: a command that
     * ends before its process does (a test, the harness) leaves no thread writing to the folder.
     */
    @Override
    public synchronized void close() {
        if (restartCache == null) {
            return;
        }
        restartCache.close();
        restartCache = null;
        try {
            Runtime.getRuntime().removeShutdownHook(restartCacheHook);
        } catch (IllegalStateException e) {
            // already shutting down: the hook is running or ran, and close is idempotent
        }
        restartCacheHook = null;
    }

    /** The loader states in {@code file}, one or a list; an unreadable file is one sentence. */
    private static List<LoaderState> states(Path file) {
        try {
            return LoaderState.parse(Files.readString(file), "--start-state " + file);
        } catch (IOException e) {
            throw new IllegalArgumentException("--start-state " + file + ": cannot read it (" + e.getMessage() + ")");
        }
    }

    private static float[] floats(double[] d) {
        float[] f = new float[d.length];
        for (int i = 0; i < d.length; i++) {
            f[i] = (float) d[i];
        }
        return f;
    }
}
