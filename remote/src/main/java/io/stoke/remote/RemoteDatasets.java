package io.stoke.remote;

import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.internal.BracePattern;
import io.stoke.loader.internal.InParallel;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardCatalog;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.TarShardScanner;
import io.stoke.loader.source.UrlDatasetProvider;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Opens WebDataset shards at URLs: {@code s3://bucket/prefix/train-{000000..000127}.tar}, one
 * {@code .tar} URL, an {@code s3://bucket/prefix/} listing (every {@code .tar} under it, in name
 * order), or the same over {@code http(s)://} (no listing there). Each shard's size comes from a
 * HEAD; then each shard is fetched once to read its tar headers, which fixes the dataset's order
 * and size before the first batch, as a folder's scan does. What the shard cache can hold of them stays
 * for the first epoch.
 *
 * <p>A URL may carry a credential in its query string (a presigned S3 URL, an Azure SAS token): the
 * requests use each URL as given, and everything else names the shards {@link Urls#withoutQuery
 * without it} (samples, the shard catalog, the restart cache) or {@link Urls#redact redacted} (messages).
 */
public final class RemoteDatasets implements UrlDatasetProvider {
    /**
     * The Parquet catalog's name (the Parquet module writes and reads it): over HTTP, which lists
     * nothing, a folder that holds one is known by it to be a folder of Parquet files.
     */
    public static final String PARQUET_CATALOG = "parquet-index.json";

    /** ServiceLoader's: the loader finds this class by the URL's scheme. */
    public RemoteDatasets() {}

    @Override
    public Set<String> schemes() {
        return Set.of("s3", "http", "https");
    }

    @Override
    public Dataset open(String url, ShardCache shardCache) {
        return open(url, RemoteOptions.defaults(), shardCache.bytes(), shardCache.folder(), shardCache.access());
    }

    /**
     * @param cacheBytes bytes of shards the shard cache holds at once ({@code --shard-cache-size})
     * @param folder     where to keep them as files, or null for memory
     */
    public static ShardDataset open(String spec, RemoteOptions options, long cacheBytes, Path folder) {
        return open(spec, options, cacheBytes, folder, FolderAccess.PRIVATE);
    }

    /**
     * {@link #open(String, RemoteOptions, long, Path)} with a folder that {@code access} says who
     * may use: the user alone, or a group's members.
     */
    public static ShardDataset open(
            String spec, RemoteOptions options, long cacheBytes, Path folder, FolderAccess access) {
        ObjectStore store = ObjectStore.forUrl(spec, options);
        try {
            String catalogUrl = catalogUrl(spec, store);
            if (catalogUrl != null) {
                ShardDataset catalogued = openCatalog(store, catalogUrl, cacheBytes, folder, access);
                if (catalogued != null) {
                    return catalogued;
                }
                if (!catalogUrl.equals(spec + ShardCatalog.FILE)) {
                    throw new IllegalArgumentException(
                            Urls.redact(catalogUrl) + " is not a shard catalog Stoke opens from (a wids shard"
                                    + " list with Stoke's `labelled`): run `stoke catalog` on the shards to write one");
                }
            }
            return scanned(spec, store, options, cacheBytes, folder, access);
        } catch (HoldsTable e) {
            store.close();
            // The table's snapshot, read by the table reader on the class path (stoke-lakehouse).
            return (ShardDataset)
                    Datasets.openTable(e.prefix, TableColumns.DEFAULT, new ShardCache(cacheBytes, folder, access));
        } catch (HoldsParquet e) {
            store.close();
            // The folder's Parquet files, read by the Parquet reader on the class path (stoke-parquet):
            // its catalog's, all of them, where it has one; else its .parquet objects.
            return (ShardDataset)
                    Datasets.openTable(e.prefix, TableColumns.DEFAULT, new ShardCache(cacheBytes, folder, access));
        } catch (RuntimeException | Error e) {
            store.close();
            throw e;
        }
    }

    /**
     * The shards at {@code spec} opened from their own headers (every shard fetched once), any
     * shard catalog beside them left aside: what {@code stoke catalog} writes a catalog from.
     */
    public static ShardDataset openScanned(String spec, RemoteOptions options, long cacheBytes, Path folder) {
        ObjectStore store = ObjectStore.forUrl(spec, options);
        try {
            return scanned(spec, store, options, cacheBytes, folder, FolderAccess.PRIVATE);
        } catch (RuntimeException | Error e) {
            store.close();
            throw e;
        }
    }

    /**
     * {@code stoke catalog} for remote shards: reads every shard's headers once and writes the catalog
     * as {@link ShardCatalog#FILE} in the shards' folder (the prefix, or the folder of a pattern or
     * shard), shard URLs relative to it. Returns the catalog's URL.
     *
     * @throws HoldsParquet {@code spec} is a folder of Parquet files, not of shards
     */
    public static String writeCatalog(String spec, RemoteOptions options, long cacheBytes) {
        String path = Urls.withoutQuery(spec); // a query's '/' is not the folder's
        String folder =
                BracePattern.hasBraces(path) || path.toLowerCase(Locale.ROOT).endsWith(".tar")
                        ? path.substring(0, path.lastIndexOf('/', braceOrEnd(path)) + 1)
                        : path.endsWith("/") ? path : path + "/";
        String catalogUrl = folder + ShardCatalog.FILE;
        try (ShardDataset dataset = openScanned(spec, options, cacheBytes, null)) {
            ShardCatalog catalog =
                    ShardCatalog.of(dataset, u -> u.startsWith(folder) ? u.substring(folder.length()) : u);
            ByteArrayOutputStream json = new ByteArrayOutputStream();
            catalog.write(json, ShardCatalog.FILE);
            try (ObjectStore store = ObjectStore.forUrl(catalogUrl, options)) {
                store.write(catalogUrl, json.toByteArray());
            }
            return catalogUrl;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static int braceOrEnd(String spec) {
        int brace = spec.indexOf('{');
        return brace < 0 ? spec.length() - 1 : brace;
    }

    private static ShardDataset scanned(
            String spec, ObjectStore store, RemoteOptions options, long cacheBytes, Path folder, FolderAccess access) {
        List<String> urls = urls(spec, store);
        List<ObjectStore.Stat> stats =
                InParallel.map(urls.size(), options.parallelism(), "stoke-shard-head", s -> store.stat(urls.get(s)));
        long[] sizes = new long[urls.size()];
        String[] etags = new String[sizes.length];
        String[] modified = new String[sizes.length];
        for (int s = 0; s < sizes.length; s++) {
            sizes[s] = stats.get(s).size();
            etags[s] = stats.get(s).etag(); // the version that names the shard's file, and that its fetch must find
            modified[s] = stats.get(s).lastModified();
        }
        RemoteShards shards = new RemoteShards(store, urls, sizes, etags, modified, cacheBytes, folder, access, null);
        return TarShardScanner.scan(
                names(urls), shards, Path.of("").toAbsolutePath(), Math.max(2, options.parallelism()));
    }

    /** The shards as samples, the shard catalog and the caches name them: their URLs without a query string. */
    private static List<String> names(List<String> urls) {
        List<String> names = new ArrayList<>(urls.size());
        for (String url : urls) {
            names.add(Urls.withoutQuery(url));
        }
        return names;
    }

    /**
     * The shard catalog to open {@code spec} from: {@code spec} itself when it names a {@code .json}, the
     * {@link ShardCatalog#FILE} under a prefix (named with or without its last '/', as {@code stoke
     * catalog} takes it) when the store has one, else null (brace patterns and single shards are
     * opened by their headers).
     */
    static String catalogUrl(String spec, ObjectStore store) {
        String path = Urls.withoutQuery(spec);
        String lower = path.toLowerCase(Locale.ROOT);
        if (lower.endsWith(".json")) {
            return spec;
        }
        if (BracePattern.hasBraces(spec) || lower.endsWith(".tar") || !path.equals(spec)) {
            return null; // a query string names an object, not a folder
        }
        String candidate = folderOf(spec) + ShardCatalog.FILE;
        try {
            store.size(candidate); // one HEAD: a listing of a million shards would be a thousand requests
            return candidate;
        } catch (ShardFetchException e) {
            if (e.notFound()) { // the object; a missing bucket is named as one
                return null;
            }
            throw e;
        }
    }

    /**
     * The shards {@code catalogUrl} lists, opened from it alone (their sizes are the catalog's, so no
     * shard is asked for its size or read until one of its samples is), or null when the file is a
     * wids shard list without Stoke's {@code labelled}.
     */
    static ShardDataset openCatalog(
            ObjectStore store, String catalogUrl, long cacheBytes, Path folder, FolderAccess access) {
        String catalogName = Urls.redact(catalogUrl);
        ShardCatalog catalog =
                store.parseWhole(catalogUrl, ReadLimits.CATALOG_FILE, in -> ShardCatalog.read(in, catalogName));
        if (catalog == null) {
            return null;
        }
        String path = Urls.withoutQuery(catalogUrl); // a query's '/' is not the folder's
        String base = path.substring(0, path.lastIndexOf('/') + 1);
        List<String> urls = new ArrayList<>(catalog.shards().size());
        long[] sizes = new long[catalog.shards().size()];
        String[] etags = new String[sizes.length];
        for (int s = 0; s < sizes.length; s++) {
            ShardCatalog.Entry e = catalog.shards().get(s);
            urls.add(e.url().contains("://") ? e.url() : base + e.url());
            sizes[s] = e.filesize();
            etags[s] = e.etag();
        }
        RemoteShards shards = new RemoteShards(
                store, urls, sizes, etags, new String[sizes.length], cacheBytes, folder, access, catalogName);
        return catalog.dataset(names(urls), shards, Path.of("").toAbsolutePath(), catalogName);
    }

    static List<String> urls(String spec, ObjectStore store) {
        if (BracePattern.hasBraces(spec)) {
            return BracePattern.expand(spec);
        }
        if (Urls.withoutQuery(spec).toLowerCase(Locale.ROOT).endsWith(".tar")) {
            return List.of(spec); // a presigned URL's query follows the .tar
        }
        if (store instanceof HttpObjectStore && Urls.withoutQuery(spec).equals(spec)) {
            // HTTP lists nothing: what a folder is, HEADs find (a table's log, a Parquet catalog).
            String folder = folderOf(spec);
            if (LakehouseMarkers.formatAt(folder, store) != null) {
                throw new HoldsTable(folder);
            }
            if (LakehouseMarkers.statIfThere(store, folder + PARQUET_CATALOG) != null) {
                throw new HoldsParquet(folder);
            }
        }
        List<String> listed = store.list(spec, ".tar");
        if (listed.isEmpty()) {
            // A folder named without its last '/' (s3://bucket/lake/images) is looked into as with it.
            String folder = folderOf(spec);
            if (LakehouseMarkers.formatAt(folder, store) != null) {
                throw new HoldsTable(folder);
            }
            if (!store.list(folder, ".parquet").isEmpty()) {
                throw new HoldsParquet(folder);
            }
            throw new IllegalArgumentException("no .tar objects under " + Urls.redact(spec));
        }
        return listed;
    }

    /** A folder's URL with its last '/', however it was named. */
    private static String folderOf(String spec) {
        return spec.endsWith("/") ? spec : spec + "/";
    }

    /** A folder that is a Delta Lake or Iceberg table: its snapshot, which open() hands on. */
    private static final class HoldsTable extends IllegalArgumentException {
        final String prefix;

        HoldsTable(String prefix) {
            super(Urls.redact(prefix) + " is a lakehouse table");
            this.prefix = prefix;
        }
    }

    /**
     * A folder with Parquet files and no tar shard: a Parquet dataset, which open() hands on to the
     * Parquet reader, and {@code stoke catalog} to the Parquet catalog's writer (neither is in this
     * module, which the Parquet one builds on).
     */
    public static final class HoldsParquet extends IllegalArgumentException {
        private final String prefix;

        HoldsParquet(String prefix) {
            super("no .tar objects under " + Urls.redact(prefix) + "; it holds Parquet files: name them, "
                    + Urls.redact(prefix) + "*.parquet");
            this.prefix = prefix;
        }

        /** The folder's URL, with its last '/'. */
        public String prefix() {
            return prefix;
        }
    }
}
