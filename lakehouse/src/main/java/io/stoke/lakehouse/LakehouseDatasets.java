package io.stoke.lakehouse;

import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.TableDatasetProvider;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.parquet.ParquetDatasets;
import io.stoke.remote.HttpObjectStore;
import io.stoke.remote.LakehouseMarkers;
import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteOptions;

/**
 * Delta Lake and Apache Iceberg tables as datasets: the snapshot's data files ({@link TableSnapshot}),
 * their row groups the shards, read as stoke-parquet reads any Parquet file. A table is named by its
 * folder (local, {@code s3://}, {@code http(s)://}) or, for Iceberg, by one of its metadata files, with a snapshot suffix ({@link SnapshotChoice}) or not; the snapshot
 * read is said once on standard error and pinned for the dataset's life, so a table written to
 * meanwhile does not change it.
 *
 * <p>Found through {@code META-INF/services} before Parquet's provider ({@link #order()}).
 */
public final class LakehouseDatasets implements TableDatasetProvider {
    /** For the service loader. */
    public LakehouseDatasets() {}

    @Override
    public int order() {
        return -1;
    }

    @Override
    public boolean opens(String spec) {
        if (!Datasets.isUrl(spec)) {
            return Datasets.lakehouseFormat(spec) != null;
        }
        String location = Datasets.withoutSnapshot(spec);
        if (location.length() != spec.length() || location.endsWith(".metadata.json")) {
            return true; // a snapshot suffix names a table, as an Iceberg metadata file does
        }
        if (!spec.endsWith("/")) {
            return false;
        }
        try (ObjectStore store = ObjectStore.forUrl(spec, RemoteOptions.defaults())) {
            return LakehouseMarkers.formatAt(spec, store) != null;
        }
    }

    @Override
    public Dataset open(String spec, TableColumns columns, UrlDatasetProvider.ShardCache shardCache) {
        return open(spec, columns, shardCache.bytes());
    }

    /** The snapshot of the table {@code spec} names: its location and, after '@', which snapshot. */
    public static TableSnapshot snapshot(String spec, TableColumns columns) {
        SnapshotChoice.Spec parsed = SnapshotChoice.parse(spec);
        if (Datasets.isUrl(parsed.location())) {
            try (ObjectStore store = ObjectStore.forUrl(parsed.location(), RemoteOptions.defaults())) {
                return snapshot(parsed, columns, store);
            }
        }
        return snapshot(parsed, columns, null);
    }

    /**
     * The dataset of the table {@code spec} names, at the snapshot it names (the latest at open when
     * none), pinned.
     *
     * @param cacheBytes how many bytes of loaded row groups the shard cache holds at once
     */
    public static ShardDataset open(String spec, TableColumns columns, long cacheBytes) {
        SnapshotChoice.Spec parsed = SnapshotChoice.parse(spec);
        return open(
                spec,
                columns,
                cacheBytes,
                Datasets.isUrl(parsed.location())
                        ? ObjectStore.forUrl(parsed.location(), RemoteOptions.defaults())
                        : null);
    }

    /** {@link #open(String, TableColumns, long)} through {@code store} (null: local), which the dataset then owns. */
    static ShardDataset open(String spec, TableColumns columns, long cacheBytes, ObjectStore store) {
        SnapshotChoice.Spec parsed = SnapshotChoice.parse(spec);
        try {
            TableSnapshot snapshot = snapshot(parsed, columns, store);
            System.err.println("[stoke] " + Urls.redact(snapshot.describe()));
            return ParquetDatasets.openFiles(snapshot.files(), columns, cacheBytes, store)
                    .pinnedTo(snapshot.pinnedSpec(), snapshot.filesWithDeletedRows());
        } catch (RuntimeException | Error e) {
            if (store != null) {
                store.close();
            }
            throw e;
        }
    }

    private static TableSnapshot snapshot(SnapshotChoice.Spec parsed, TableColumns columns, ObjectStore store) {
        String location = parsed.location();
        String format = store == null
                ? Datasets.lakehouseFormat(location)
                : location.endsWith(".metadata.json")
                        ? Datasets.ICEBERG
                        : LakehouseMarkers.formatAt(location.endsWith("/") ? location : location + "/", store);
        if (format == null) {
            throw new IllegalArgumentException(Urls.redact(location) + " is neither a Delta Lake table (no _delta_log/)"
                    + " nor an Iceberg table (no metadata/*.metadata.json)"
                    + (store instanceof HttpObjectStore
                            ? "; over HTTP, which lists nothing, an Iceberg table is found by its"
                                    + " metadata/version-hint.text, where there is none name its metadata file"
                                    + " (.../metadata/NNNNN-....metadata.json)"
                            : ""));
        }
        if (format.equals(Datasets.DELTA)) {
            return DeltaSnapshots.read(location, parsed.choice(), columns, store);
        }
        return IcebergSnapshots.read(location, parsed.choice(), columns, store);
    }
}
