package io.stoke.loader.source;

import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.internal.BracePattern;
import io.stoke.loader.internal.InputFiles;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.Urls;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.function.Consumer;

/**
 * Opens a dataset from the one string every command and {@code stoke.DataLoader} take:
 * <ul>
 *   <li>a folder in torchvision's ImageFolder layout ({@link ImageFolder});</li>
 *   <li>a list file of {@code <path> <label>} lines ({@link ListFile});</li>
 *   <li>a WebDataset {@code .tar} shard, a brace pattern of them ({@code train-{000000..000127}.tar},
 *       {@link BracePattern}), or a folder of {@code .tar} files and no sub-folders (all of them, in
 *       name order), read where they lie ({@link MappedShards}, {@link TarShardScanner});</li>
 *   <li>shards at a URL ({@code s3://}, {@code http(s)://}), opened by the {@link UrlDatasetProvider}
 *       for its scheme (stoke-remote's, when it is on the class path);</li>
 *   <li>Parquet: a {@code .parquet} file, a pattern or glob of them, or a folder of them, opened by
 *       the {@link TableDatasetProvider} on the class path (stoke-parquet's; {@link #isParquet});</li>
 *   <li>a Hugging Face {@code datasets.Dataset}'s Arrow files, opened by stoke-arrow's provider
 *       ({@link #isArrow});</li>
 *   <li>a Delta Lake or Apache Iceberg table, read as its snapshot by stoke-lakehouse's provider
 *       ({@link #lakehouseFormat}; at a URL, found by listing the folder), and never as the loose
 *       Parquet files under it: a table's folder keeps the files its later versions removed.</li>
 * </ul>
 * A dataset of shards owns mappings: close the returned dataset when done with it.
 */
public final class Datasets {
    private Datasets() {}

    /** Shards per shuffle window over remote shards when the user names none: a window must fit the shard cache. */
    public static final int DEFAULT_REMOTE_WINDOW = 8;

    /** Whether {@code spec} is a URL ({@code s3://}, {@code http://}, {@code https://}) rather than a local path. */
    public static boolean isUrl(String spec) {
        String lower = spec.toLowerCase(Locale.ROOT);
        return lower.startsWith("s3://") || lower.startsWith("http://") || lower.startsWith("https://");
    }

    /** Whether {@code spec} is an {@code http://} or {@code https://} URL: a store Stoke reads and never writes. */
    public static boolean isHttpUrl(String spec) {
        return isUrl(spec) && !spec.toLowerCase(Locale.ROOT).startsWith("s3://");
    }

    /**
     * {@link #openLocal}, then what the scan found wrong with whole shards (not a tar file,
     * damaged after some members) under {@code policy}: {@link ErrorPolicy#FAIL} throws, naming
     * every damaged shard; {@link ErrorPolicy#SKIP} says each through {@code warn}, loudly, and
     * keeps the samples before the damage. A dataset of shards without any {@code .cls} member is
     * said once too: its labels are all -1.
     */
    public static Dataset openLocalChecked(String spec, ErrorPolicy policy, Consumer<String> warn) {
        return checked(openLocal(spec), spec, policy, warn);
    }

    /**
     * {@link #openLocalChecked}.
     *
     * @deprecated four overloads of {@code open} had four contracts; use {@link #openLocalChecked}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public static Dataset open(String spec, ErrorPolicy policy, Consumer<String> warn) {
        return openLocalChecked(spec, policy, warn);
    }

    /** What {@link #openLocalChecked} does after opening: for remote shards too. */
    public static Dataset checked(Dataset dataset, String spec, ErrorPolicy policy, Consumer<String> warn) {
        if (!(dataset instanceof ShardDataset sharded)) {
            return dataset;
        }
        Shards shards = sharded.shards();
        String shown = Urls.redact(spec); // a presigned URL's query is a credential: never printed
        if (!shards.problems().isEmpty()) {
            if (policy == ErrorPolicy.FAIL) {
                dataset.close();
                throw new IllegalArgumentException(
                        "damaged shard(s) in " + shown + ":\n  " + String.join("\n  ", shards.problems())
                                + "\n(--on-error skip reads the samples before the damage and names the rest)");
            }
            for (String problem : shards.problems()) {
                warn.accept("WARNING: skipping what is past the damage: " + problem);
            }
        }
        if (dataset.size() == 0) {
            dataset.close();
            throw new IllegalArgumentException("no samples in " + shown);
        }
        if (!shards.catalogued() && shards.remote()) {
            // Local shards' headers are read where they are mapped, which costs little; remote ones were each fetched.
            // An HTTP server is read-only to Stoke: its catalog is written here, and served beside the shards.
            boolean http = isHttpUrl(spec);
            warn.accept("note: opening " + shown + " fetched all " + shards.shardCount() + " shard"
                    + (shards.shardCount() == 1 ? "" : "s") + " to read their tar headers; `stoke catalog '" + shown
                    + (http
                            ? "' --out " + ShardCatalog.FILE + "` writes their shard catalog here; served beside them,"
                            : "'` writes their shard catalog " + ShardCatalog.FILE + ", and")
                    + " opening then reads only that");
        }
        if (!shards.labelled()) {
            warn.accept("note: " + shards.unlabelledNote(shown));
        }
        return dataset;
    }

    /**
     * The dataset at {@code spec}, local or at a URL: a URL's shards are held in {@code shardCache}.
     * Its scheme's {@link UrlDatasetProvider} is looked up on the class path; without one, the error
     * names the module to add. As it is, as {@link #openLocal}: {@link #checked} applies an error policy.
     */
    public static Dataset openLocalOrUrl(String spec, UrlDatasetProvider.ShardCache shardCache) {
        return openLocalOrUrl(spec, shardCache, TableColumns.DEFAULT);
    }

    /**
     * {@link #openLocalOrUrl(String, UrlDatasetProvider.ShardCache)}, with the columns that hold a
     * table dataset's image, label and key ({@link TableColumns#DEFAULT}: found by their defaults);
     * columns named for a dataset that is not a table are refused.
     */
    public static Dataset openLocalOrUrl(String spec, UrlDatasetProvider.ShardCache shardCache, TableColumns columns) {
        // A URL folder with columns named can only be Parquet; without, its listing tells (stoke-remote).
        if (spec != null
                && (lakehouseFormat(spec) != null
                        || (isUrl(spec) && !withoutSnapshot(spec).equals(spec)) // a table's snapshot at a URL
                        || (isUrl(spec) && withoutSnapshot(spec).endsWith(".metadata.json")) // an Iceberg table's
                        || isParquet(spec)
                        || isArrow(spec)
                        || (isUrl(spec) && spec.endsWith("/") && !columns.isDefault()))) {
            return openTable(spec, columns, shardCache);
        }
        if (!columns.isDefault()) {
            throw new IllegalArgumentException("columns are named (" + columns + ") but " + Urls.redact(spec)
                    + " is neither a Parquet nor an Arrow dataset");
        }
        if (spec == null || !isUrl(spec)) {
            return openLocal(spec);
        }
        String scheme = spec.substring(0, spec.indexOf(':')).toLowerCase(Locale.ROOT);
        for (UrlDatasetProvider provider : ServiceLoader.load(UrlDatasetProvider.class)) {
            if (provider.schemes().contains(scheme)) {
                return provider.open(spec, shardCache);
            }
        }
        throw new IllegalArgumentException(
                Urls.redact(spec) + ": no store for " + scheme + ":// URLs on the class path: add the module "
                        + "io.stoke:stoke-remote (Stoke's jar and the Python package carry it)");
    }

    /**
     * {@link #openLocalOrUrl(String, UrlDatasetProvider.ShardCache)}.
     *
     * @deprecated four overloads of {@code open} had four contracts; use {@link #openLocalOrUrl(String,
     *     UrlDatasetProvider.ShardCache)}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public static Dataset open(String spec, UrlDatasetProvider.ShardCache cache) {
        return openLocalOrUrl(spec, cache);
    }

    /**
     * {@link #openLocalOrUrl(String, UrlDatasetProvider.ShardCache, TableColumns)}.
     *
     * @deprecated four overloads of {@code open} had four contracts; use {@link #openLocalOrUrl(String,
     *     UrlDatasetProvider.ShardCache, TableColumns)}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public static Dataset open(String spec, UrlDatasetProvider.ShardCache cache, TableColumns columns) {
        return openLocalOrUrl(spec, cache, columns);
    }

    /** Row groups of a Parquet dataset held at once when no shard cache is named. */
    private static final long DEFAULT_TABLE_CACHE = 2L << 30;

    /**
     * The dataset at {@code spec} as a table: the first {@link TableDatasetProvider} on the class
     * path, in {@link TableDatasetProvider#order()}, that opens it. What stoke-remote hands on when a
     * URL folder's listing shows a table.
     */
    public static Dataset openTable(String spec, TableColumns columns, UrlDatasetProvider.ShardCache shardCache) {
        UrlDatasetProvider.ShardCache held =
                shardCache != null ? shardCache : new UrlDatasetProvider.ShardCache(DEFAULT_TABLE_CACHE, null);
        List<TableDatasetProvider> providers = new ArrayList<>();
        ServiceLoader.load(TableDatasetProvider.class).forEach(providers::add);
        providers.sort(java.util.Comparator.comparingInt(TableDatasetProvider::order));
        for (TableDatasetProvider provider : providers) {
            if (provider.opens(spec)) {
                return provider.open(spec, columns, held);
            }
        }
        String format = lakehouseFormat(spec);
        if (format != null) {
            throw new IllegalArgumentException(Urls.redact(spec) + " is " + format + " table, and no reader of its"
                    + " snapshot is on the class path: add the module io.stoke:stoke-lakehouse (Stoke's jar and"
                    + " the Python package carry it); its folder's Parquet files are not read loose, since they"
                    + " include the files its later versions removed");
        }
        if (isArrow(spec)) {
            throw new IllegalArgumentException(
                    Urls.redact(spec) + " is an Arrow dataset, and no Arrow reader is on"
                            + " the class path: add the module io.stoke:stoke-arrow (Stoke's jar and the Python package carry it)");
        }
        throw new IllegalArgumentException(
                Urls.redact(spec) + " is a Parquet dataset, and no Parquet reader is on the class path: "
                        + "add the module io.stoke:stoke-parquet (Stoke's jar and the Python package carry it)");
    }

    /**
     * The lakehouse table format of a local {@code spec}, with its article ("a Delta Lake", "an
     * Apache Iceberg"), or null when it is none: a folder holding {@code _delta_log/} is a Delta Lake
     * table; one holding {@code metadata/} with a {@code *.metadata.json} file, or such a file
     * itself, is an Iceberg table. A snapshot suffix ({@code TABLE@v12}, {@code TABLE@2026-11-29T06:00:00Z})
     * is looked past. A folder inside a table (a partition's, Iceberg's {@code data/}) is refused by
     * the Parquet reader, which looks up its parents ({@link #lakehouseAbove}). URLs are found by
     * listing (stoke-remote, stoke-lakehouse): null here.
     */
    public static String lakehouseFormat(String spec) {
        if (spec == null || isUrl(spec) || spec.startsWith(ARROW_SPEC)) {
            return null;
        }
        String location = withoutSnapshot(spec);
        Path path;
        try {
            path = Path.of(location);
        } catch (java.nio.file.InvalidPathException e) {
            return null;
        }
        if (Files.isRegularFile(path) && location.endsWith(".metadata.json")) {
            return ICEBERG;
        }
        return Files.isDirectory(path) ? lakehouseFolder(path) : null;
    }

    /** "a Delta Lake", the article and name {@link #lakehouseFormat} gives. */
    public static final String DELTA = "a Delta Lake";

    /** "an Apache Iceberg", the article and name {@link #lakehouseFormat} gives. */
    public static final String ICEBERG = "an Apache Iceberg";

    /** The table format of the folder {@code dir} itself, or null. */
    public static String lakehouseFolder(Path dir) {
        if (Files.isDirectory(dir.resolve("_delta_log"))) {
            return DELTA;
        }
        Path metadata = dir.resolve("metadata");
        if (Files.isDirectory(metadata)) {
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(metadata, "*.metadata.json")) {
                if (entries.iterator().hasNext()) {
                    return ICEBERG;
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list " + metadata, e);
            }
        }
        return null;
    }

    /**
     * The nearest folder at or above {@code dir} that is a lakehouse table, or null: a Parquet file
     * under it is one of the table's data files, live or removed, and is not read loose.
     */
    public static Path lakehouseAbove(Path dir) {
        for (Path d = dir.toAbsolutePath().normalize(); d != null; d = d.getParent()) {
            if (lakehouseFolder(d) != null) {
                return d;
            }
        }
        return null;
    }

    /**
     * {@code spec} without a snapshot suffix: {@code @v} and a version, or {@code @} and an ISO-8601
     * time ({@code 2026-11-29T06:00:00Z}, or a date).
     */
    public static String withoutSnapshot(String spec) {
        int at = spec.lastIndexOf('@');
        if (at <= 0 || spec.indexOf('/', at) >= 0) {
            return spec;
        }
        String suffix = spec.substring(at + 1);
        boolean version = suffix.length() > 1
                && suffix.charAt(0) == 'v'
                && suffix.substring(1).chars().allMatch(Character::isDigit);
        boolean time = suffix.length() >= 10 && Character.isDigit(suffix.charAt(0)) && suffix.charAt(4) == '-';
        return version || time ? spec.substring(0, at) : spec;
    }

    /** What a spec starts with when it lists a Hugging Face {@code datasets.Dataset}'s Arrow files as JSON. */
    public static final String ARROW_SPEC = "arrow:";

    /**
     * Whether {@code spec} names an Arrow IPC dataset: an {@code .arrow} file (a Hugging Face
     * {@code datasets} cache file), a folder that {@code save_to_disk} wrote (its {@code state.json}
     * beside {@code .arrow} files), or an {@value #ARROW_SPEC} spec ({@code stoke.DataLoader}'s for a
     * {@code datasets.Dataset}: its files and indices mapping).
     */
    public static boolean isArrow(String spec) {
        if (spec.startsWith(ARROW_SPEC) || spec.toLowerCase(Locale.ROOT).endsWith(".arrow")) {
            return true;
        }
        if (isUrl(spec)) {
            return false;
        }
        try {
            return Files.isRegularFile(Path.of(spec, "state.json"));
        } catch (java.nio.file.InvalidPathException e) {
            return false;
        }
    }

    /**
     * Whether {@code spec} names a Parquet dataset: a {@code .parquet} file, a pattern of them (braces
     * or a glob), or a local folder whose files include {@code .parquet} ones and no {@code .tar}
     * shard or sub-folder (Spark's {@code _SUCCESS} and {@code .crc} files beside them are skipped).
     */
    public static boolean isParquet(String spec) {
        String lower = spec.toLowerCase(Locale.ROOT);
        if (lower.endsWith(".parquet")) {
            return true;
        }
        if (isUrl(spec)) {
            return false;
        }
        Path path;
        try {
            path = Path.of(spec);
        } catch (java.nio.file.InvalidPathException e) {
            return false;
        }
        if (!Files.isDirectory(path)) {
            return false;
        }
        boolean parquet = false;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(path)) {
            for (Path p : entries) {
                String name = p.getFileName().toString().toLowerCase(Locale.ROOT);
                if (name.startsWith(".") || name.startsWith("_")) {
                    continue;
                }
                if (Files.isDirectory(p) || isTar(name)) {
                    return false;
                }
                parquet |= name.endsWith(".parquet");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + path, e);
        }
        return parquet;
    }

    /**
     * The local dataset at {@code spec}, as it is: a shard's damage is in {@link Shards#problems()},
     * not checked ({@link #openLocalChecked} checks it under an error policy); a URL is refused
     * ({@link #openLocalOrUrl} opens one).
     */
    public static Dataset openLocal(String spec) {
        if (spec == null || spec.isBlank()) {
            throw new IllegalArgumentException("no dataset given");
        }
        if (lakehouseFormat(spec) != null || isParquet(spec) || isArrow(spec)) {
            return openTable(spec, TableColumns.DEFAULT, null);
        }
        if (isUrl(spec)) {
            throw new IllegalArgumentException(Urls.redact(spec)
                    + " is a URL: open it with openLocalOrUrl(spec, shardCache), which finds its store");
        }
        if (BracePattern.hasBraces(spec)) {
            List<String> names = BracePattern.expand(spec);
            for (String name : names) {
                String not = InputFiles.notAFile(Path.of(name));
                if (not != null) {
                    throw new IllegalArgumentException("shard " + name + " (from " + spec + ") " + not);
                }
            }
            return openShards(names);
        }
        Path path = Path.of(spec);
        Path catalog = Files.isDirectory(path) ? path.resolve(ShardCatalog.FILE) : path;
        if (catalog.getFileName() != null
                && catalog.getFileName().toString().endsWith(".json")
                && Files.isRegularFile(catalog)) {
            ShardDataset catalogued = openCatalog(catalog);
            if (catalogued != null) {
                return catalogued;
            }
            if (!Files.isDirectory(path)) {
                throw new IllegalArgumentException(
                        catalog + " is not a shard catalog Stoke opens from (a wids shard list"
                                + " with Stoke's `labelled`): run `stoke catalog` on the shards to write one");
            }
        }
        if (Files.isDirectory(path)) {
            List<String> tars = tarFolder(path);
            return tars != null ? openShards(tars) : ImageFolder.scan(path);
        }
        if (Files.isRegularFile(path)) {
            return isTar(spec) ? openShards(List.of(spec)) : ListFile.read(path);
        }
        throw new IllegalArgumentException(
                spec + " is neither a folder, a list file, a .tar shard nor a shard pattern ("
                        + (Files.exists(path, LinkOption.NOFOLLOW_LINKS)
                                ? InputFiles.notAFile(path).replaceFirst("^is ", "")
                                : "no such file")
                        + ")");
    }

    /**
     * {@link #openLocal}.
     *
     * @deprecated four overloads of {@code open} had four contracts; use {@link #openLocal}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public static Dataset open(String spec) {
        return openLocal(spec);
    }

    /**
     * The shards a shard catalog file ({@code index.json}) lists, opened from it alone: nothing of a
     * shard is read until one of its samples is; each shard's size must be the catalog's. Null when the file is a wids shard
     * list without Stoke's {@code labelled}.
     */
    public static ShardDataset openCatalog(Path catalogFile) {
        ShardCatalog catalog;
        try (InputStream in = Files.newInputStream(catalogFile)) {
            ReadLimits.checkSize(catalogFile.toString(), Files.size(catalogFile), ReadLimits.CATALOG_FILE);
            catalog = ShardCatalog.read(in, catalogFile.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the shard catalog " + catalogFile + ": " + e.getMessage(), e);
        }
        if (catalog == null) {
            return null;
        }
        Path dir = catalogFile.toAbsolutePath().getParent();
        List<String> names = new ArrayList<>();
        List<Path> files = new ArrayList<>();
        for (ShardCatalog.Entry e : catalog.shards()) {
            Path file = dir.resolve(e.url());
            String not = InputFiles.notAFile(file);
            if (not != null) {
                throw new IllegalArgumentException("shard " + file + " (listed in " + catalogFile + ") " + not);
            }
            long size;
            try {
                size = Files.size(file);
            } catch (IOException x) {
                throw new IllegalArgumentException(
                        "shard " + file + " (listed in " + catalogFile + ") cannot be read: " + x.getMessage());
            }
            if (size != e.filesize()) {
                throw new IllegalArgumentException("shard " + file + " has " + size + " bytes, the shard catalog "
                        + catalogFile + " says " + e.filesize()
                        + ": the shard catalog is stale; run `stoke catalog` on the shards again");
            }
            names.add(file.toString());
            files.add(file);
        }
        return catalog.dataset(names, new MappedShards(files), dir, catalogFile.toString());
    }

    /**
     * {@link #openCatalog}.
     *
     * @deprecated "index" means a sample's position only; {@code index.json} is the shard catalog: use
     *     {@link #openCatalog}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public static ShardDataset openIndexed(Path indexFile) {
        return openCatalog(indexFile);
    }

    /**
     * The local dataset at {@code spec} read from its shards' own headers, any shard catalog beside
     * them left aside: what {@code stoke catalog} writes a catalog from.
     */
    public static Dataset openScanned(String spec) {
        Path path = Path.of(spec);
        if (Files.isDirectory(path)) {
            List<String> tars = tarFolder(path);
            if (tars == null) {
                throw new IllegalArgumentException(spec + " holds no .tar shards");
            }
            return openShards(tars);
        }
        return openLocal(spec);
    }

    /** Local shards by path, in the order given. */
    public static ShardDataset openShards(List<String> names) {
        List<Path> files = new ArrayList<>(names.size());
        for (String n : names) {
            files.add(Path.of(n));
        }
        Path root = files.get(0).toAbsolutePath().getParent();
        return TarShardScanner.scan(
                names, new MappedShards(files), root, Runtime.getRuntime().availableProcessors());
    }

    static boolean isTar(String name) {
        return name.toLowerCase(Locale.ROOT).endsWith(".tar");
    }

    /**
     * The folder's {@code .tar} files in name order when it has no sub-folders (other files, such as
     * {@code stoke pack}'s {@code index.json} or an unfinished {@code .tar.tmp}, are not shards); else null.
     */
    private static List<String> tarFolder(Path dir) {
        List<String> tars = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path p : entries) {
                String name = p.getFileName().toString();
                if (name.startsWith(".")) {
                    continue;
                }
                if (Files.isDirectory(p)) {
                    return null; // class folders: an ImageFolder
                }
                if (isTar(name)) {
                    // A shard that cannot be read is named, never left out: a dataset one shard short
                    // (a link into a volume not mounted, say) would train on less without a word.
                    String not = InputFiles.notAFile(p);
                    if (not != null) {
                        throw new IllegalArgumentException("shard " + p + " " + not);
                    }
                    tars.add(name);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
        if (tars.isEmpty()) {
            return null;
        }
        tars.sort(null);
        List<String> out = new ArrayList<>(tars.size());
        for (String t : tars) {
            out.add(dir.resolve(t).toString());
        }
        return out;
    }
}
