package io.stoke.lakehouse;

import io.delta.kernel.Scan;
import io.delta.kernel.Snapshot;
import io.delta.kernel.Table;
import io.delta.kernel.data.FilteredColumnarBatch;
import io.delta.kernel.data.Row;
import io.delta.kernel.engine.Engine;
import io.delta.kernel.exceptions.KernelException;
import io.delta.kernel.exceptions.TableNotFoundException;
import io.delta.kernel.exceptions.UnsupportedProtocolVersionException;
import io.delta.kernel.exceptions.UnsupportedTableFeatureException;
import io.delta.kernel.internal.actions.DeletionVectorDescriptor;
import io.delta.kernel.internal.deletionvectors.DeletionVectorStoredBitmap;
import io.delta.kernel.internal.deletionvectors.RoaringBitmapArray;
import io.delta.kernel.utils.CloseableIterator;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.TableColumns;
import io.stoke.parquet.ParquetDatasets;
import io.stoke.remote.ObjectStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * A Delta Lake table's snapshot, by Delta Kernel's replay of its log ({@code _delta_log/}): the
 * {@code add} actions left after every {@code remove}, so a file that {@code OPTIMIZE}, {@code DELETE}
 * or {@code MERGE} rewrote is read once, in its new form, and a removed file not at all, until
 * {@code VACUUM} deletes it. What Stoke cannot read as the table's rows is refused in one sentence
 * naming it: a reader feature or protocol Kernel does not support, column mapping (the Parquet
 * columns then have other names than the table's), and an image, label or key column that is a
 * partition column (held in the path, not the files).
 */
public final class DeltaSnapshots {
    private DeltaSnapshots() {}

    /**
     * The snapshot of the Delta table at {@code location} that {@code choice} names.
     *
     * @param store the store for a table at a URL (null: local)
     */
    public static TableSnapshot read(String location, SnapshotChoice choice, TableColumns columns, ObjectStore store) {
        String root = TableSnapshot.trimSlash(location);
        Engine engine = new KernelEngine(new KernelFileIO(store));
        String shown = Urls.redact(root);
        Snapshot snapshot;
        try {
            Table table = Table.forPath(engine, root);
            if (choice.version() != null) {
                snapshot = table.getSnapshotAsOfVersion(engine, choice.version());
            } else if (choice.asOf() != null) {
                snapshot = table.getSnapshotAsOfTimestamp(engine, choice.asOf().toEpochMilli());
            } else {
                snapshot = table.getLatestSnapshot(engine);
            }
            refuseColumnMapping(shown, snapshot);
            refusePartitionColumns(shown, snapshot, columns);
            List<ParquetDatasets.TableFile> files = dataFiles(shown, root, table.getPath(engine), snapshot, engine);
            files.sort(Comparator.comparing(ParquetDatasets.TableFile::location));
            Instant committed = Instant.ofEpochMilli(snapshot.getTimestamp(engine));
            return new TableSnapshot(Datasets.DELTA, root, snapshot.getVersion(), committed, files, "");
        } catch (TableNotFoundException e) {
            throw new IllegalArgumentException(
                    shown + " is not a Delta Lake table Kernel can read: " + e.getMessage(), e);
        } catch (UnsupportedTableFeatureException e) {
            throw new IllegalArgumentException(
                    shown + " uses the Delta Lake table feature"
                            + (e.getUnsupportedFeatures().size() == 1 ? " " : "s ")
                            + String.join(", ", new TreeSet<>(e.getUnsupportedFeatures()))
                            + ", which Delta Kernel " + kernelVersion() + " cannot read: not read",
                    e);
        } catch (UnsupportedProtocolVersionException e) {
            throw new IllegalArgumentException(
                    shown + " needs Delta Lake reader version " + e.getVersion() + ", above what Delta Kernel "
                            + kernelVersion() + " reads: not read",
                    e);
        } catch (KernelException e) {
            throw new IllegalArgumentException(
                    shown + ": Delta Kernel cannot read this snapshot: " + e.getMessage(), e);
        }
    }

    private static List<ParquetDatasets.TableFile> dataFiles(
            String shown, String root, String tablePath, Snapshot snapshot, Engine engine) {
        List<ParquetDatasets.TableFile> files = new ArrayList<>();
        long[] held = {0}; // deleted rows read so far
        try {
            forEachAdd(snapshot, engine, add -> {
                String path = add.getString(add.getSchema().indexOf("path"));
                int dv = add.getSchema().indexOf("deletionVector");
                long[] deleted = dv >= 0 && !add.isNullAt(dv)
                        ? deletedRows(shown, tablePath, path, add.getStruct(dv), engine, held[0])
                        : new long[0];
                held[0] += deleted.length;
                long size = add.getLong(add.getSchema().indexOf("size"));
                files.add(new ParquetDatasets.TableFile(resolve(root, path), size, deleted));
            });
        } catch (IOException e) {
            throw new UncheckedIOException(shown + ": cannot read the table's log: " + e.getMessage(), e);
        }
        return files;
    }

    /** Each {@code add} action of the snapshot's files, in the order Kernel's scan gives them. */
    static void forEachAdd(Snapshot snapshot, Engine engine, Consumer<Row> action) throws IOException {
        Scan scan = snapshot.getScanBuilder().build();
        try (CloseableIterator<FilteredColumnarBatch> batches = scan.getScanFiles(engine)) {
            while (batches.hasNext()) {
                try (CloseableIterator<Row> rows = batches.next().getRows()) {
                    while (rows.hasNext()) {
                        Row scanFile = rows.next();
                        action.accept(scanFile.getStruct(scanFile.getSchema().indexOf("add")));
                    }
                }
            }
        }
    }

    /**
     * The rows of data file {@code path} that its deletion vector deletes, ascending, by Kernel's
     * reader of the vector (inline in the log, or in a {@code deletion_vector_*.bin} file beside the
     * data, read through Stoke's file access). The stored vector is bounded before it is read, and
     * its rows must be as many as the log says. {@code held}: the rows the snapshot's other vectors
     * delete, read already; with this one's they may not pass {@link TableSnapshot#MAX_DELETED_ROWS}.
     */
    static long[] deletedRows(String shown, String tablePath, String path, Row vector, Engine engine, long held) {
        DeletionVectorDescriptor dv = DeletionVectorDescriptor.fromRow(vector);
        if (held + dv.getCardinality() > TableSnapshot.MAX_DELETED_ROWS) {
            throw new IllegalArgumentException(String.format(
                    Locale.ROOT,
                    "%s: its deletion vectors delete more than %,d rows (%,d up to %s), which Stoke holds"
                            + " at 8 bytes each while it reads: not read; rewrite its files without them"
                            + " (REORG TABLE ... APPLY (PURGE))",
                    shown,
                    TableSnapshot.MAX_DELETED_ROWS,
                    held + dv.getCardinality(),
                    path));
        }
        if (dv.getSizeInBytes() < 0 || dv.getSizeInBytes() > ReadLimits.DELETION_VECTOR) {
            throw new IllegalArgumentException(shown + ": the log of " + path + " "
                    + ReadLimits.exceeds("a deletion vector", dv.getSizeInBytes(), ReadLimits.DELETION_VECTOR)
                    + ": not read");
        }
        RoaringBitmapArray bitmap;
        try {
            bitmap = new DeletionVectorStoredBitmap(dv, Optional.of(tablePath)).load(engine.getFileSystemClient());
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException(
                    shown + ": cannot read the deletion vector of " + path + ": " + e.getMessage(), e);
        }
        long[] rows = bitmap.toArray();
        if (rows.length != dv.getCardinality()) {
            throw new IllegalArgumentException(shown + ": the deletion vector of " + path + " holds " + rows.length
                    + " rows, and the log says " + dv.getCardinality() + ": not read");
        }
        return rows;
    }

    /** A data file's location: its {@code add} path is a URI, relative to the table's root or absolute. */
    static String resolve(String root, String path) {
        URI uri;
        try {
            uri = new URI(path);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("data file path " + path + " in the table's log is not a URI", e);
        }
        if (uri.getScheme() != null) {
            return "file".equals(uri.getScheme()) ? Path.of(uri).toString() : path;
        }
        String relative = uri.getPath();
        if (Datasets.isUrl(root)) {
            return root + "/" + relative;
        }
        return Path.of(root).resolve(relative).toString();
    }

    private static void refuseColumnMapping(String shown, Snapshot snapshot) {
        Map<String, String> properties = snapshot.getTableProperties();
        String mode = properties.get("delta.columnMapping.mode");
        if (mode != null && !mode.equalsIgnoreCase("none")) {
            throw new IllegalArgumentException(shown + " uses Delta Lake column mapping (delta.columnMapping.mode="
                    + mode + "), whose Parquet columns have other names than the table's; Stoke reads columns by"
                    + " their Parquet names: not read");
        }
    }

    private static void refusePartitionColumns(String shown, Snapshot snapshot, TableColumns columns) {
        for (String partition : snapshot.getPartitionColumnNames()) {
            String lower = partition.toLowerCase(Locale.ROOT);
            boolean named = lower.equalsIgnoreCase(String.valueOf(columns.image()))
                    || lower.equalsIgnoreCase(String.valueOf(columns.label()))
                    || lower.equalsIgnoreCase(String.valueOf(columns.key()))
                    || (columns.label() == null && lower.equals("label"));
            if (named) {
                throw new IllegalArgumentException(
                        shown + " is partitioned by " + partition + ", a column Stoke reads:"
                                + " a partition column's values are in the files' paths, not in their Parquet columns: not read");
            }
        }
    }

    /** Delta Kernel's version, from its jar. */
    static String kernelVersion() {
        String v = Table.class.getPackage().getImplementationVersion();
        return v != null ? v : "(version unknown)";
    }
}
