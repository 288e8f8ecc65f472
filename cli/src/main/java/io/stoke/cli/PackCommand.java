package io.stoke.cli;

import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.pack.PackConflictException;
import io.stoke.pack.PackException;
import io.stoke.pack.PackOptions;
import io.stoke.pack.Packer;
import io.stoke.serve.ByteSize;
import io.stoke.serve.LoaderSetup;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code stoke pack DATA --out DIR}: the dataset as WebDataset shards. The work is
 * {@link Packer}'s; this parses the options, reports progress and prints the figures.
 */
@Command(
        name = "pack",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Writes DATA as WebDataset shards: DIR/shard-000000.tar, shard-000001.tar, ... and "
                    + "the shard catalog DIR/index.json (WebDataset's wids manifest). Per sample, in dataset order: KEY.jpg (KEY.npy with "
                    + "--format raw), then KEY.cls (the label in ASCII decimal). KEY is the sample's path without its "
                    + "extension, dots in the file name replaced by '_' (n01440764/img_001); for a Parquet row, its "
                    + "file's name without .parquet, then its --key-column value or its row in the file "
                    + "(train-00000-of-00004/17). A sample without a label (-1) has no KEY.cls. "
                    + "The same data and options give byte-identical shards. A run interrupted, or stopped by a bad file, "
                    + "resumes after its last whole shard when run again with the same options.",
            ""
        })
public final class PackCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(
            index = "0",
            paramLabel = "DATA",
            description = "ImageFolder directory, list file, or Parquet (a .parquet file, a glob or brace pattern of"
                    + " them, or a folder of them), on this machine.")
    String given; // as typed: a URL taken as a Path would lose a slash (http:/host) and be "no such file"

    /** {@link #given}, a local path. */
    private Path data;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Output folder (created when missing).")
    Path out;

    @Option(
            names = "--format",
            paramLabel = "jpeg|png|raw",
            description = "jpeg: each image resized (--resize or --max-side) with an antialiased bilinear filter "
                    + "and re-encoded with libjpeg-turbo, 4:2:0; an image already at or below the target is stored "
                    + "byte for byte as it was (never upscaled). png: the same, lossless (8-bit RGB PNG, libspng): "
                    + "the stored pixels are torchvision's Resize exactly. raw: the evaluation transform's pixels, "
                    + "Resize(--resize) + CenterCrop(--crop), as uint8 (C, C, 3) .npy, what 'stoke bench' delivers "
                    + "(default: ${DEFAULT-VALUE}).")
    Choices.PackFormat format = Choices.PackFormat.jpeg;

    @Option(
            names = "--resize",
            paramLabel = "S",
            description =
                    "jpeg: the shorter side becomes S; raw: torchvision's Resize(S) before the crop (default: 256).")
    Integer resize;

    @Option(
            names = "--max-side",
            paramLabel = "N",
            description = "jpeg, instead of --resize: the longer side becomes N when it is longer (aspect kept).")
    Integer maxSide;

    @Option(names = "--quality", paramLabel = "Q", description = "jpeg: libjpeg-turbo's quality, 1-100 (default: 90).")
    Integer quality;

    @Option(
            names = "--restart-interval",
            paramLabel = "MCUS",
            description = "jpeg: a restart marker every MCUS MCUs (16 pixels of a row; each image gets the divisor of"
                    + " its row's MCUs nearest MCUS), so that Stoke's region decoder decodes only the segments that"
                    + " hold a crop. The files stay standard JPEGs with the same pixels (default: 4).")
    Integer restartInterval;

    @Option(
            names = "--no-restart-markers",
            description = "jpeg: write no restart markers (the files TurboJPEG alone writes, byte for byte).")
    boolean noRestartMarkers;

    @Option(names = "--crop", paramLabel = "C", description = "raw: torchvision's CenterCrop(C) (default: 224).")
    Integer crop;

    @Option(
            names = "--keep-pixels",
            description = "Keep every image's decoded pixels exactly, instead of a --format: each JPEG is rewritten"
                    + " losslessly with restart markers (its DCT coefficients as they are, sequential, a marker every"
                    + " --restart-interval MCUs or the nearest divisor of a row; each copy is decoded beside its"
                    + " original and compared), or kept byte for byte where it has markers already or cannot be"
                    + " rewritten (arithmetic coding, CMYK, damaged data), and counted; PNG, WebP and other images"
                    + " are stored as they are.")
    boolean keepPixels;

    @Option(
            names = "--shard-size",
            paramLabel = "BYTES",
            description =
                    "A new shard starts before a sample that would take the current one past BYTES; a shard "
                            + "holds at least one sample. Suffixes K, M, G, T are binary (default: ${DEFAULT-VALUE} = 256 MiB).")
    String shardSize = "256M";

    @Option(
            names = "--workers",
            paramLabel = "N",
            description =
                    "Threads that decode, resize and encode (default: the number of cores, ${DEFAULT-VALUE} here).")
    int workers = Runtime.getRuntime().availableProcessors();

    @Option(
            names = "--on-error",
            paramLabel = "POLICY",
            description = "fail: a file that does not decode stops the pack, naming it (exit code 1; the whole "
                    + "shards stay and a rerun resumes); skip: leave it out, name it and count it (default: "
                    + "${DEFAULT-VALUE}).")
    Choices.OnError onError = Choices.OnError.fail;

    // --key-column's values must be unique in a pack: it checks them by reading every row group once first.
    @Mixin
    ColumnOptions columnOptions = new ColumnOptions();

    @Option(
            names = "--shard-cache-size",
            paramLabel = "SIZE",
            description = "Parquet: bytes of loaded row groups the shard cache holds at once; at least twice the"
                    + " largest (default: ${DEFAULT-VALUE}).")
    String shardCache = "2G";

    @Option(names = "--shard-cache", paramLabel = "SIZE", hidden = true)
    void deprecatedShardCache(String size) {
        DeprecatedSpelling.say(System.err, "stoke pack", "--shard-cache", "--shard-cache-size");
        shardCache = size;
    }

    @Option(
            names = "--overwrite",
            description =
                    "Replace a pack of other data or options in DIR (only its shards and its shard catalog index.json).")
    boolean overwrite;

    @Override
    public Integer call() {
        PrintStream err = System.err;
        PackOptions options;
        ErrorPolicy policy;
        TableColumns columns;
        UrlDatasetProvider.ShardCache cache;
        boolean parquet;
        String spec;
        try {
            if (Datasets.isUrl(given)) {
                throw new IllegalArgumentException(Urls.redact(given) + " is a URL: pack reads data on this machine"
                        + " (an ImageFolder directory, a list file or Parquet files); fetch them first");
            }
            data = Path.of(given);
            options = options();
            policy = onError.value;
            if (workers < 1) {
                throw new IllegalArgumentException("--workers must be positive, not " + workers);
            }
            columns = columnOptions.columns();
            cache = new UrlDatasetProvider.ShardCache(ByteSize.parse(shardCache), null);
            spec = columnOptions.dataSpec(data.toString());
            parquet = Datasets.isParquet(data.toString())
                    || !spec.equals(data.toString())
                    || Datasets.lakehouseFormat(spec) != null;
            if (!parquet && !columns.isDefault()) {
                throw new IllegalArgumentException("--image-column, --label-column and --key-column name Parquet "
                        + "columns, and " + data + " is not a Parquet dataset");
            }
        } catch (IllegalArgumentException e) {
            err.println("stoke pack: " + e.getMessage());
            return Main.EXIT_USAGE;
        }
        Dataset dataset = parquet ? openParquet(spec, columns, cache) : LoaderSetup.openFailing(data);
        if (!(dataset instanceof FileDataset) && !parquet) {
            dataset.close();
            err.println("stoke pack: " + data + " is tar shards already: pack reads an ImageFolder directory, a list"
                    + " file or Parquet");
            return Main.EXIT_USAGE;
        }
        try (dataset) {
            return pack(dataset, columns, options, policy);
        }
    }

    /**
     * The Parquet dataset at {@link #data}, its row groups loaded into {@code cache}: pack reads in
     * order, so its workers hold one or two row groups at a time.
     */
    private Dataset openParquet(String spec, TableColumns columns, UrlDatasetProvider.ShardCache cache) {
        return Datasets.checked(
                Datasets.openLocalOrUrl(spec, cache, columns),
                spec,
                ErrorPolicy.FAIL,
                warning -> System.err.println("stoke: " + warning));
    }

    private int pack(Dataset dataset, TableColumns columns, PackOptions options, ErrorPolicy policy) {
        PrintStream err = System.err;
        err.printf(
                Locale.ROOT,
                "stoke pack: %d images in %s -> %s (%s, %d workers)%n",
                dataset.size(),
                data,
                out,
                options.describe(),
                workers);
        ProgressBar[] progress = {null};
        long[] last = {0};
        Packer packer = new Packer(dataset, data, out, options)
                .columns(columns)
                .workers(workers)
                .onError(policy)
                .overwrite(overwrite)
                .listener(new Packer.Listener() {
                    @Override
                    public void started(long total) {
                        if (total > 0) {
                            progress[0] = ProgressBar.terminalOnly(err, total);
                        }
                    }

                    @Override
                    public void progress(long done, long total) {
                        progress[0].advance(done - last[0]);
                        last[0] = done;
                    }

                    @Override
                    public void skipped(String path, String reason) {
                        err.println("skipped: " + path + ": " + reason);
                    }

                    @Override
                    public void removed(Path file) {
                        err.println("stoke pack: removed " + file + " (not part of this pack)");
                    }
                });
        Packer.Result r;
        try {
            r = packer.run();
        } catch (PackConflictException e) {
            err.println("stoke pack: " + e.getMessage());
            return Main.EXIT_USAGE;
        } catch (PackException e) {
            if (progress[0] != null) {
                progress[0].finish();
            }
            err.println("stoke pack: FAILED: " + e.getMessage());
            return Main.EXIT_FAILED;
        }
        if (progress[0] != null) {
            progress[0].finish();
        }
        PrintStream o = System.out;
        if (r.alreadyComplete()) {
            o.printf(
                    Locale.ROOT,
                    "stoke pack %s -> %s: already complete (%d samples in %d shards); nothing to do%n",
                    data,
                    out,
                    r.packSamples(),
                    r.shards());
            return 0;
        }
        o.printf(Locale.ROOT, "stoke pack %s -> %s%n", data, out);
        if (r.resumedAt() > 0) {
            o.printf(Locale.ROOT, "  resumed at sample     %d (the shards before it were whole)%n", r.resumedAt());
        }
        o.printf(
                Locale.ROOT,
                "  images                %d packed, %d skipped%s%n",
                r.packed(),
                r.skipped().size(),
                options.format().encoded()
                        ? " (" + r.keptOriginal() + " kept as they were: not larger than the target)"
                        : "");
        if (r.keptPixels() != null) {
            Packer.KeptPixels k = r.keptPixels();
            o.printf(
                    Locale.ROOT,
                    "  JPEGs                 %d rewritten with restart markers, %d kept as they were (%d with markers"
                            + " already)%n",
                    k.copied(),
                    k.seekable() + k.keptCount(),
                    k.seekable());
            k.kept().forEach((why, count) -> o.printf(Locale.ROOT, "    kept: %d  %s%n", count, why));
            o.printf(
                    Locale.ROOT,
                    "  JPEG bytes            %.1f MB before, %.1f MB after (%.3fx)%n",
                    k.jpegBytesIn() / 1e6,
                    k.jpegBytesOut() / 1e6,
                    k.jpegBytesIn() > 0 ? (double) k.jpegBytesOut() / k.jpegBytesIn() : 1.0);
            o.printf(Locale.ROOT, "  other images          %d stored as they were%n", k.others());
        } else if (packer.options().restartMcus() > 0) {
            // Kept files have whatever markers they came with: progressive ones none that help.
            o.printf(
                    Locale.ROOT,
                    "  restart markers       in the %d re-encoded images, every %d MCUs or the nearest divisor of a"
                            + " row%n",
                    r.packed() - r.keptOriginal(),
                    packer.options().restartMcus());
        }
        o.printf(Locale.ROOT, "  throughput            %.0f images/s%n", r.imagesPerSecond());
        o.printf(
                Locale.ROOT,
                "  shards                %d written, %d in the pack (%d samples)%n",
                r.shardsWritten(),
                r.shards(),
                r.packSamples());
        o.printf(Locale.ROOT, "  bytes in              %.1f MB of images read%n", r.bytesIn() / 1e6);
        o.printf(Locale.ROOT, "  bytes out             %.1f MB of shards written%n", r.bytesOut() / 1e6);
        o.flush();
        if (!r.skipped().isEmpty()) {
            err.printf(
                    Locale.ROOT,
                    "stoke pack: SKIPPED %d file%s that did not decode (left out of the shards, listed in"
                            + " index.json):%n",
                    r.skipped().size(),
                    r.skipped().size() == 1 ? "" : "s");
            for (String s : r.skipped()) {
                err.println("skipped: " + s);
            }
        }
        return 0;
    }

    /** The options as a {@link PackOptions}, defaults filled in; an error names the option at fault. */
    private PackOptions options() {
        long size = ByteSize.parse(shardSize);
        if (keepPixels) {
            var parsed = spec.commandLine().getParseResult();
            for (String o :
                    List.of("--format", "--resize", "--max-side", "--quality", "--crop", "--no-restart-markers")) {
                if (parsed.hasMatchedOption(o)) {
                    throw new IllegalArgumentException("--keep-pixels keeps every image as it is: no " + o);
                }
            }
            if (!RestartCopy.available()) {
                throw new IllegalArgumentException("--keep-pixels rewrites JPEGs with Stoke's region decoder library,"
                        + " which is not loaded here: " + RestartCopy.unavailableReason());
            }
            if (restartInterval != null && restartInterval < 1) {
                throw new IllegalArgumentException("--restart-interval must be at least 1 MCU");
            }
            return PackOptions.keepPixels(
                    restartInterval == null ? PackOptions.DEFAULT_RESTART_MCUS : restartInterval, size);
        }
        return switch (format) {
            case jpeg -> {
                if (crop != null) {
                    throw new IllegalArgumentException("--crop applies to --format raw only");
                }
                if (maxSide != null && resize != null) {
                    throw new IllegalArgumentException(
                            "give --resize S (shorter side) or --max-side N (longer side), not both");
                }
                int q = quality == null ? 90 : quality;
                if (noRestartMarkers && restartInterval != null) {
                    throw new IllegalArgumentException("give --restart-interval or --no-restart-markers, not both");
                }
                PackOptions o = maxSide != null
                        ? PackOptions.jpegLongerSide(maxSide, q, size)
                        : PackOptions.jpegShorterSide(resize == null ? 256 : resize, q, size);
                if (restartInterval != null && restartInterval < 1) {
                    throw new IllegalArgumentException(
                            "--restart-interval must be at least 1 MCU (--no-restart-markers writes none)");
                }
                yield noRestartMarkers
                        ? o.withRestartInterval(0)
                        : restartInterval != null ? o.withRestartInterval(restartInterval) : o;
            }
            case png -> {
                if (crop != null) {
                    throw new IllegalArgumentException("--crop applies to --format raw only");
                }
                if (quality != null || restartInterval != null || noRestartMarkers) {
                    throw new IllegalArgumentException(
                            "--quality and the restart markers' options apply to --format jpeg only");
                }
                if (maxSide != null && resize != null) {
                    throw new IllegalArgumentException(
                            "give --resize S (shorter side) or --max-side N (longer side), not both");
                }
                yield maxSide != null
                        ? PackOptions.pngLongerSide(maxSide, size)
                        : PackOptions.pngShorterSide(resize == null ? 256 : resize, size);
            }
            case raw -> {
                if (maxSide != null || quality != null || restartInterval != null || noRestartMarkers) {
                    throw new IllegalArgumentException(
                            "--max-side, --quality and the restart markers' options apply to --format jpeg only");
                }
                yield PackOptions.raw(resize == null ? 256 : resize, crop == null ? 224 : crop, size);
            }
        };
    }
}
