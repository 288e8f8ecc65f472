package io.stoke.remote;

import io.stoke.loader.source.Datasets;

/**
 * Whether a folder at a URL is a lakehouse table, as {@link Datasets#lakehouseFolder} tells for a
 * local one: {@code _delta_log/} under it is Delta Lake's log, {@code metadata/*.metadata.json}
 * Iceberg's. On S3 one listing of each; over HTTP, which lists nothing, a HEAD of the files a table
 * always keeps ({@code _delta_log/_last_checkpoint} or its first commit; Iceberg's
 * {@code metadata/version-hint.text}, which Hadoop-style tables write).
 */
public final class LakehouseMarkers {
    private LakehouseMarkers() {}

    /** {@link Datasets#DELTA}, {@link Datasets#ICEBERG}, or null: the table {@code folderUrl} (ending in '/') is. */
    public static String formatAt(String folderUrl, ObjectStore store) {
        if (!folderUrl.endsWith("/")) {
            throw new IllegalArgumentException("not a folder URL: " + folderUrl);
        }
        if (store instanceof HttpObjectStore) {
            if (exists(store, folderUrl + "_delta_log/_last_checkpoint")
                    || exists(store, folderUrl + "_delta_log/00000000000000000000.json")) {
                return Datasets.DELTA;
            }
            return exists(store, folderUrl + "metadata/version-hint.text") ? Datasets.ICEBERG : null;
        }
        if (!store.list(folderUrl + "_delta_log/", ".json").isEmpty()
                || !store.list(folderUrl + "_delta_log/", ".parquet").isEmpty()) {
            return Datasets.DELTA;
        }
        return store.list(folderUrl + "metadata/", ".metadata.json").isEmpty() ? null : Datasets.ICEBERG;
    }

    /**
     * The nearest folder at or above {@code folderUrl}, up to {@code levels} parents (a partition's
     * folder, Iceberg's {@code data/}), that is a table, with its format; null when none is.
     */
    public static Table tableAbove(String folderUrl, ObjectStore store, int levels) {
        String folder = folderUrl;
        for (int up = 0; up <= levels; up++) {
            String format = formatAt(folder, store);
            if (format != null) {
                return new Table(folder, format);
            }
            int scheme = folder.indexOf("://");
            int slash = folder.lastIndexOf('/', folder.length() - 2);
            // Stop at the bucket or host: s3://bucket/ has no parent folder.
            if (slash <= folder.indexOf('/', scheme + 3)) {
                return null;
            }
            folder = folder.substring(0, slash + 1);
        }
        return null;
    }

    /** A table's folder URL and its format ({@link Datasets#DELTA} or {@link Datasets#ICEBERG}). */
    public record Table(String folderUrl, String format) {}

    private static boolean exists(ObjectStore store, String url) {
        return statIfThere(store, url) != null;
    }

    /** The object at {@code url}'s size and version (a HEAD), or null where the store has none there. */
    public static ObjectStore.Stat statIfThere(ObjectStore store, String url) {
        try {
            return store.stat(url);
        } catch (ShardFetchException e) {
            if (e.notFound()) {
                return null;
            }
            throw e;
        }
    }
}
