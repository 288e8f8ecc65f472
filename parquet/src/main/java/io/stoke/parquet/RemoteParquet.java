package io.stoke.parquet;

import io.stoke.loader.internal.BracePattern;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.Urls;
import io.stoke.remote.LakehouseMarkers;
import io.stoke.remote.ObjectStore;
import io.stoke.remote.ShardFetchException;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The files of a remote Parquet dataset's spec, in dataset order: a file's URL; a brace pattern; a
 * glob in the last part ({@code s3://bucket/train/*.parquet}); or a folder ({@code s3://bucket/train/},
 * its {@code .parquet} objects). With a {@link ParquetCatalog} in the folder, they are its entries, and
 * opening reads that one object; without, a folder or glob is listed, and each file's size and
 * footer are read (many files at once).
 */
final class RemoteParquet {
    private RemoteParquet() {}

    static List<ParquetTable.Source> sources(String spec, ObjectStore store) {
        return sources(spec, store, true);
    }

    /**
     * The files themselves, listed and read, whatever catalog the folder holds: what
     * {@code stoke catalog} writes a catalog from. The one there may be stale (a file added,
     * replaced or removed since) or unreadable, which is why it is being written again.
     */
    static List<ParquetTable.Source> listed(String spec, ObjectStore store) {
        return sources(spec, store, false);
    }

    private static List<ParquetTable.Source> sources(String spec, ObjectStore store, boolean throughCatalog) {
        String folder = folderOf(spec);
        String named = spec.substring(folder.length());
        // A folder or glob is listed, and would take a table's removed files: refused there. A file
        // named alone or in braces is read as named (spark-embed's tasks name a snapshot's files so).
        LakehouseMarkers.Table table = BracePattern.hasBraces(spec) || !(named.isEmpty() || isGlob(named))
                ? null
                : LakehouseMarkers.tableAbove(folder, store, 2);
        if (table != null) {
            throw new IllegalArgumentException(Urls.redact(spec) + " lies in " + table.format() + " table, "
                    + Urls.redact(table.folderUrl()) + ": open the table itself, whose log says which files are its"
                    + " snapshot; its folder keeps the files later versions removed");
        }
        String selection = spec.substring(folder.length());
        ParquetCatalog catalog = throughCatalog ? catalog(folder, store) : null;
        if (catalog != null) {
            return fromCatalog(spec, folder, selection, catalog, store);
        }
        List<String> urls;
        if (BracePattern.hasBraces(spec)) {
            urls = BracePattern.expand(spec);
        } else if (selection.isEmpty() || isGlob(selection)) {
            PathMatcher glob =
                    selection.isEmpty() ? null : FileSystems.getDefault().getPathMatcher("glob:" + selection);
            urls = new ArrayList<>();
            for (String url : store.list(folder, ".parquet")) {
                String name = url.substring(url.lastIndexOf('/') + 1);
                boolean direct = url.length() == folder.length() + name.length(); // not in a sub-folder
                if (direct && ParquetFiles.isParquetName(name) && (glob == null || glob.matches(Path.of(name)))) {
                    urls.add(url);
                }
            }
            if (urls.isEmpty()) {
                throw new IllegalArgumentException("no .parquet objects match " + spec);
            }
        } else {
            urls = List.of(spec);
        }
        List<ParquetTable.Source> out = new ArrayList<>(urls.size());
        for (String url : urls) {
            out.add(new ParquetTable.Source(url, new RemoteInputFile(store, url, -1, null, null), null));
        }
        return out;
    }

    /** The catalog in {@code folder}, or null when there is none (one HEAD). */
    static ParquetCatalog catalog(String folder, ObjectStore store) {
        String url = folder + ParquetCatalog.FILE;
        try {
            store.size(url);
        } catch (ShardFetchException e) {
            if (e.notFound()) {
                return null;
            }
            throw e;
        }
        return store.parseWhole(url, ReadLimits.CATALOG_FILE, in -> ParquetCatalog.read(in, url));
    }

    private static List<ParquetTable.Source> fromCatalog(
            String spec, String folder, String selection, ParquetCatalog catalog, ObjectStore store) {
        Map<String, ParquetCatalog.Entry> byUrl = new HashMap<>();
        List<String> inOrder = new ArrayList<>();
        for (ParquetCatalog.Entry e : catalog.files()) {
            String url = e.url().contains("://") ? e.url() : folder + e.url();
            byUrl.put(url, e);
            inOrder.add(url);
        }
        List<String> urls;
        if (BracePattern.hasBraces(spec)) {
            urls = BracePattern.expand(spec);
        } else if (selection.isEmpty()) {
            urls = inOrder;
        } else if (isGlob(selection)) {
            PathMatcher glob = FileSystems.getDefault().getPathMatcher("glob:" + selection);
            urls = new ArrayList<>();
            for (String url : inOrder) {
                String name = url.substring(url.lastIndexOf('/') + 1);
                if (url.length() == folder.length() + name.length() && glob.matches(Path.of(name))) {
                    urls.add(url);
                }
            }
        } else {
            urls = List.of(spec);
        }
        List<ParquetTable.Source> out = new ArrayList<>(urls.size());
        for (String url : urls) {
            ParquetCatalog.Entry e = byUrl.get(url);
            if (e == null) {
                throw new IllegalArgumentException(url + " is not in " + folder + ParquetCatalog.FILE
                        + ": the catalog is stale; run `stoke catalog` on the files again");
            }
            out.add(new ParquetTable.Source(
                    url,
                    new RemoteInputFile(store, url, e.filesize(), e.etag(), folder + ParquetCatalog.FILE),
                    e.footer()));
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no file of " + folder + ParquetCatalog.FILE + " matches " + spec);
        }
        return out;
    }

    /** The folder a spec's files lie in: up to the last '/' before any brace or glob. */
    static String folderOf(String spec) {
        int end = spec.length();
        for (int i = 0; i < spec.length(); i++) {
            char c = spec.charAt(i);
            if (c == '{' || c == '*' || c == '?' || c == '[') {
                end = i;
                break;
            }
        }
        return spec.substring(0, spec.lastIndexOf('/', end - 1) + 1);
    }

    private static boolean isGlob(String s) {
        return s.indexOf('*') >= 0 || s.indexOf('?') >= 0 || s.indexOf('[') >= 0;
    }
}
