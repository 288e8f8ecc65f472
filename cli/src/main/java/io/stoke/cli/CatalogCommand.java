package io.stoke.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.internal.SafeFiles;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardCatalog;
import io.stoke.loader.source.ShardDataset;
import io.stoke.parquet.ParquetDatasets;
import io.stoke.remote.RemoteDatasets;
import io.stoke.remote.RemoteOptions;
import io.stoke.serve.ByteSize;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code stoke catalog SHARDS}: reads every shard's tar headers once, in parallel, and writes the
 * {@link ShardCatalog} ({@code index.json}) that lets opening the dataset read only that file.
 */
@Command(
        name = "catalog",
        mixinStandardHelpOptions = true,
        description = {
            "Writes the shard catalog index.json for WebDataset shards made elsewhere (stoke pack writes its "
                    + "own): each shard's URL, sample count and size, in WebDataset's wids format. Opening the shards then "
                    + "reads the listing and this file, nothing else, whatever the number of shards; each shard's headers "
                    + "are read when the shard is first read. A shard rewritten since is named as a stale catalog, not read. "
                    + "Parquet files at a URL (s3://bucket/train/*.parquet, a brace pattern, a file, or a folder that "
                    + "holds .parquet objects and no shard): writes the catalog parquet-index.json beside them, each "
                    + "file's size, ETag and footer, so that they open from it alone. Local Parquet files open from "
                    + "their footers; their catalog is for their folder served over HTTP, which lists nothing, or "
                    + "copied into a store. Run again, it lists and reads the shards or files as they are now, "
                    + "whatever catalog is there."
        })
public class CatalogCommand implements Callable<Integer> {
    @Parameters(
            index = "0",
            paramLabel = "SHARDS",
            description = "A folder of .tar shards, a brace pattern, or an s3:// prefix or pattern; or Parquet files"
                    + " (a folder of them, a glob, a brace pattern or a file), local or at a URL.")
    String shards;

    @Option(
            names = "--out",
            paramLabel = "FILE",
            description = "Where to write the catalog, a local file (default: index.json beside the shards, in"
                    + " the store for s3:// ones).")
    Path out;

    @Option(
            names = "--shard-cache-size",
            paramLabel = "SIZE",
            description = "Remote shards: bytes of whole shards the shard cache holds at once while reading them"
                    + " (default: ${DEFAULT-VALUE}).")
    String shardCache = "4G";

    /** The old spelling of {@code --shard-cache-size}, kept one release: it works and says so once. */
    @Option(names = "--shard-cache", paramLabel = "SIZE", hidden = true)
    void deprecatedShardCache(String size) {
        DeprecatedSpelling.say(System.err, "stoke catalog", "--shard-cache", "--shard-cache-size");
        shardCache = size;
    }

    @Override
    public Integer call() {
        PrintStream err = System.err;
        boolean remote = Datasets.isUrl(shards);
        long start = System.nanoTime();
        try {
            boolean parquet = Datasets.isParquet(shards);
            if (out == null && Datasets.isHttpUrl(shards)) {
                // Said before any shard or footer is fetched: the catalog could not be written there.
                err.println("stoke catalog: " + Urls.redact(shards) + " is served over HTTP, which Stoke reads and"
                        + " does not write to: "
                        + (parquet
                                ? "run `stoke catalog` on the folder the server serves, which writes "
                                        + RemoteDatasets.PARQUET_CATALOG + " beside the files"
                                : "`--out " + ShardCatalog.FILE + "` writes the shard catalog here; serve it beside"
                                        + " the shards"));
                return Main.EXIT_USAGE;
            }
            if (parquet && out != null) {
                err.println("stoke catalog: a Parquet catalog is written beside its files, as "
                        + RemoteDatasets.PARQUET_CATALOG + " (its names are relative to their folder); --out is for"
                        + " shards");
                return Main.EXIT_USAGE;
            }
            if (parquet || (remote && out == null)) {
                String url;
                if (parquet) {
                    // Each file's size, ETag and footer, so that the files open from this one object
                    // (local files: once the folder is served over HTTP, or copied into a store).
                    url = ParquetDatasets.writeCatalog(shards);
                } else {
                    // Beside the shards, in the store (S3; an HTTP server is read-only here and says so).
                    // A folder of Parquet files is catalogued as Parquet, as it opens.
                    try {
                        url = RemoteDatasets.writeCatalog(shards, RemoteOptions.defaults(), ByteSize.parse(shardCache));
                    } catch (RemoteDatasets.HoldsParquet folder) {
                        url = ParquetDatasets.writeCatalog(folder.prefix());
                    }
                }
                err.printf(
                        Locale.ROOT,
                        "stoke catalog: %s, in %.1f s%n",
                        Urls.redact(url),
                        (System.nanoTime() - start) / 1e9);
                return 0;
            }
            Path target = out != null ? out : localDefault();
            if (isPackManifest(target)) {
                err.println("stoke catalog: " + target
                        + " is stoke pack's manifest, which catalogues its shards already;" + " give --out elsewhere");
                return Main.EXIT_USAGE;
            }
            try (Dataset opened = remote
                    ? RemoteDatasets.openScanned(shards, RemoteOptions.defaults(), ByteSize.parse(shardCache), null)
                    : Datasets.openScanned(shards)) {
                if (!(opened instanceof ShardDataset dataset)) {
                    err.println("stoke catalog: " + Urls.redact(shards) + " is not tar shards");
                    return Main.EXIT_USAGE;
                }
                Path dir = target.toAbsolutePath().getParent();
                ShardCatalog catalog = ShardCatalog.of(dataset, name -> url(name, dir, remote));
                write(catalog, target);
                err.printf(
                        Locale.ROOT,
                        "stoke catalog: %s: %d shards, %d samples%s, in %.1f s%n",
                        target,
                        catalog.shards().size(),
                        catalog.samples(),
                        catalog.labelled() ? ", labelled" : ", no labels",
                        (System.nanoTime() - start) / 1e9);
                return 0;
            }
        } catch (IllegalArgumentException e) {
            err.println("stoke catalog: " + e.getMessage());
            return e.getMessage().startsWith("damaged shard") ? Main.EXIT_FAILED : Main.EXIT_USAGE;
        }
    }

    private Path localDefault() {
        Path p = Path.of(shards);
        return Files.isDirectory(p)
                ? p.resolve(ShardCatalog.FILE)
                : p.toAbsolutePath().getParent().resolve(ShardCatalog.FILE);
    }

    /** Local shards beside the catalog are named relative to it, so the folder can move; others as given. */
    private static String url(String name, Path dir, boolean remote) {
        if (remote) {
            return name;
        }
        Path file = Path.of(name).toAbsolutePath();
        return file.startsWith(dir) ? dir.relativize(file).toString() : file.toString();
    }

    private static boolean isPackManifest(Path file) {
        if (!Files.isRegularFile(file)) {
            return false;
        }
        try {
            JsonNode root = new ObjectMapper().readTree(file.toFile());
            return root.path("stoke").has("options");
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Through an exclusive temporary file renamed into place (a link planted at the name, or at a
     * temporary file's, is replaced or refused, never followed), with the umask's mode: a catalog is
     * read by whoever reads the dataset.
     */
    private static void write(ShardCatalog catalog, Path target) {
        try {
            Files.createDirectories(target.toAbsolutePath().getParent());
            SafeFiles.writeStreamAtomically(
                    target, null, o -> catalog.write(o, target.getFileName().toString()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + target + ": " + e.getMessage(), e);
        }
    }
}
