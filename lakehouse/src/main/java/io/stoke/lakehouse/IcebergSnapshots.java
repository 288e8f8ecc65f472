package io.stoke.lakehouse;

import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.TableColumns;
import io.stoke.parquet.ParquetDatasets;
import io.stoke.remote.HttpObjectStore;
import io.stoke.remote.LakehouseMarkers;
import io.stoke.remote.ObjectStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * An Apache Iceberg table's snapshot, by Iceberg's own Java library ({@code iceberg-core}): its
 * metadata file, the snapshot's manifest list and manifests, planned by a table scan, so a data file
 * that a delete or a compaction replaced is read in its new form and a removed one not at all. Which
 * metadata file: the one named, or the table folder's latest ({@code metadata/version-hint.text}, as
 * Hadoop tables write it, else the highest-numbered {@code metadata/*.metadata.json}, as catalogs
 * name them). Row-level deletes (merge-on-read's position delete files and deletion vectors) are
 * applied, their rows left out ({@link IcebergDeletes}). What Stoke cannot read as the table's rows
 * is refused in one sentence naming it: equality deletes, data files other than Parquet, a format version Iceberg's library does not read, and a column Stoke reads that was
 * renamed (Iceberg matches columns by id, Stoke by their Parquet names). Partitions need nothing:
 * Iceberg's partition values are computed from columns its data files hold.
 */
public final class IcebergSnapshots {
    /** A metadata file's name: Hadoop tables' {@code v12.metadata.json}, catalogs' {@code 00012-<uuid>.metadata.json}. */
    static final Pattern METADATA_VERSION = Pattern.compile("^(?:v(\\d+)|(\\d+)-.*)\\.metadata\\.json$");

    /** {@code version-hint.text}: a number. */
    private static final long VERSION_HINT_BYTES = 1 << 10;

    private IcebergSnapshots() {}

    /**
     * The snapshot of the Iceberg table at {@code location} (its folder, or one of its metadata
     * files) that {@code choice} names: a snapshot id, the latest committed at or before a time, or
     * the metadata's current one.
     *
     * @param store the store for a table at a URL (null: local)
     */
    public static TableSnapshot read(String location, SnapshotChoice choice, TableColumns columns, ObjectStore store) {
        String shown = Urls.redact(location);
        String metadataFile = metadataFile(location, store);
        String openedAt = tableFolderOf(metadataFile);
        TableMetadata metadata;
        try {
            long size = Datasets.isUrl(metadataFile)
                    ? store.size(metadataFile)
                    : Files.size(PositionedFile.local(metadataFile));
            ReadLimits.checkSize(Urls.redact(metadataFile), size, ReadLimits.CATALOG_FILE);
            metadata = TableMetadataParser.read(new IcebergFileIO(store, null, null), metadataFile);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    shown + ": cannot read " + Urls.redact(metadataFile) + ": " + e.getMessage(), e);
        } catch (IllegalArgumentException | IllegalStateException | UnsupportedOperationException e) {
            // TableMetadataParser's refusals: "Cannot read unsupported version 4", a missing field.
            throw new IllegalArgumentException(
                    shown + ": Apache Iceberg " + icebergVersion() + " cannot read the metadata "
                            + Urls.redact(metadataFile) + ": " + e.getMessage() + ": not read",
                    e);
        }
        IcebergFileIO io = new IcebergFileIO(store, metadata.location(), openedAt);
        Table table = new BaseTable(new StaticTableOperations(metadata, io), shown);
        Snapshot snapshot = chosen(shown, table, choice);
        refuseRenamedColumns(shown, table, columns);
        List<ParquetDatasets.TableFile> files = dataFiles(shown, table, snapshot, io, store);
        files.sort(Comparator.comparing(ParquetDatasets.TableFile::location));
        String root = location.endsWith(".metadata.json") ? location : TableSnapshot.trimSlash(location);
        String detail = "metadata " + metadataFile.substring(metadataFile.lastIndexOf('/') + 1)
                + (!io.relocates()
                        ? ""
                        : "; written at " + metadata.location() + ", its files read under "
                                + TableSnapshot.trimSlash(openedAt));
        return new TableSnapshot(
                Datasets.ICEBERG,
                root,
                snapshot.snapshotId(),
                Instant.ofEpochMilli(snapshot.timestampMillis()),
                files,
                detail);
    }

    private static Snapshot chosen(String shown, Table table, SnapshotChoice choice) {
        if (choice.version() != null) {
            Snapshot s = table.snapshot(choice.version());
            if (s == null) {
                throw new IllegalArgumentException(shown + " has no snapshot " + choice.version()
                        + " (an Iceberg table's versions are its snapshot ids: " + snapshotIds(table) + ")");
            }
            return s;
        }
        if (choice.asOf() != null) {
            Long id =
                    SnapshotUtil.nullableSnapshotIdAsOfTime(table, choice.asOf().toEpochMilli());
            if (id == null) {
                throw new IllegalArgumentException(shown + " has no snapshot committed at or before " + choice.asOf());
            }
            return table.snapshot(id);
        }
        Snapshot current = table.currentSnapshot();
        if (current == null) {
            throw new IllegalArgumentException(shown + " has no snapshot yet: an Iceberg table with no rows");
        }
        return current;
    }

    /** The table's snapshots, by id and time: the last ten, and how many before them. */
    private static String snapshotIds(Table table) {
        List<String> ids = new ArrayList<>();
        for (Snapshot s : table.snapshots()) {
            ids.add(s.snapshotId() + " (" + Instant.ofEpochMilli(s.timestampMillis()) + ")");
        }
        int shown = Math.min(10, ids.size());
        return ids.isEmpty()
                ? "none"
                : (ids.size() > shown ? (ids.size() - shown) + " earlier, then " : "")
                        + String.join(", ", ids.subList(ids.size() - shown, ids.size()));
    }

    private static List<ParquetDatasets.TableFile> dataFiles(
            String shown, Table table, Snapshot snapshot, IcebergFileIO io, ObjectStore store) {
        List<ParquetDatasets.TableFile> files = new ArrayList<>();
        IcebergDeletes deletes = new IcebergDeletes(shown, io, store);
        try (CloseableIterable<FileScanTask> tasks =
                table.newScan().useSnapshot(snapshot.snapshotId()).planFiles()) {
            for (FileScanTask task : tasks) {
                DataFile file = task.file();
                if (file.format() != FileFormat.PARQUET) {
                    throw new IllegalArgumentException(shown + " holds " + file.format() + " data files ("
                            + Urls.redact(file.location()) + "), and Stoke reads Parquet's alone: not read");
                }
                files.add(new ParquetDatasets.TableFile(
                        localOrUrl(io.relocated(file.location())), file.fileSizeInBytes(), deletes.deletedRows(task)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(shown + ": cannot read the snapshot's manifests: " + e.getMessage(), e);
        } catch (NotFoundException | ValidationException e) {
            throw new IllegalArgumentException(
                    shown + ": cannot read snapshot " + snapshot.snapshotId() + ": " + e.getMessage(), e);
        }
        return files;
    }

    /**
     * Refuses a table in which a column Stoke reads (the named image, label and key columns, or
     * {@code image} and {@code label} by default) has had another name: Iceberg matches a data file's
     * columns to the table's by their ids, so the files written before a rename hold the column under
     * its old name and those after under its new one, where Stoke reads Parquet columns by their names.
     * Every schema the table has had is looked at, since a rename makes no snapshot of its own.
     */
    private static void refuseRenamedColumns(String shown, Table table, TableColumns columns) {
        for (String name : new String[] {
            columns.image() != null ? columns.image() : "image",
            columns.label() != null ? columns.label() : "label",
            columns.key()
        }) {
            if (name == null) {
                continue;
            }
            for (Schema schema : table.schemas().values()) {
                Types.NestedField field = schema.caseInsensitiveFindField(name);
                if (field == null) {
                    continue;
                }
                for (Schema other : table.schemas().values()) {
                    Types.NestedField then = other.findField(field.fieldId());
                    if (then != null && !then.name().equals(field.name())) {
                        throw new IllegalArgumentException(shown + ": column " + field.name() + " is named "
                                + then.name() + " in another of the table's schemas (a rename), and Stoke reads"
                                + " Parquet columns by their names, where Iceberg matches them by id: not read;"
                                + " rewrite the files written before the rename");
                    }
                }
            }
        }
    }

    /**
     * The metadata file of the table at {@code location}: itself, when it names one; else the
     * folder's {@code metadata/version-hint.text}'s, else its highest-numbered one (a listing, which
     * HTTP lacks).
     */
    static String metadataFile(String location, ObjectStore store) {
        if (location.endsWith(".metadata.json")) {
            return location;
        }
        String folder = slashed(location) + "metadata/";
        String shown = Urls.redact(TableSnapshot.trimSlash(location));
        String hint = hint(folder, store);
        if (hint != null) {
            String named = folder + "v" + hint + ".metadata.json";
            if (exists(named, store)) {
                // A writer creates its version before it points the hint at it, and two writers may
                // point it in either order: the latest is the last of the versions after the hint,
                // as Iceberg's HadoopTableOperations finds it.
                return latestFrom(folder, Long.parseLong(hint), store);
            }
        }
        if (store instanceof HttpObjectStore) {
            throw new IllegalArgumentException(shown + " is an Apache Iceberg table over HTTP with no"
                    + " metadata/version-hint.text, and HTTP lists nothing: name its metadata file"
                    + " (" + shown + "/metadata/NNNNN-....metadata.json)");
        }
        List<String> names = new ArrayList<>();
        if (store != null) {
            for (String url : store.list(folder, ".metadata.json")) {
                String name = url.substring(folder.length());
                if (name.indexOf('/') < 0) {
                    names.add(name);
                }
            }
        } else {
            try (DirectoryStream<Path> entries =
                    Files.newDirectoryStream(PositionedFile.local(folder), "*.metadata.json")) {
                for (Path p : entries) {
                    names.add(p.getFileName().toString());
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list " + folder + ": " + e.getMessage(), e);
            }
        }
        String latest = null;
        long latestVersion = -1;
        for (String name : names) {
            Matcher m = METADATA_VERSION.matcher(name);
            if (m.matches()) {
                long v = Long.parseLong(m.group(1) != null ? m.group(1) : m.group(2));
                if (v > latestVersion) {
                    latestVersion = v;
                    latest = name;
                }
            }
        }
        if (latest == null) {
            throw new IllegalArgumentException(shown + " is an Apache Iceberg table whose metadata/ holds no"
                    + " numbered metadata file (v12.metadata.json, 00012-<uuid>.metadata.json): name the one to read");
        }
        return folder + latest;
    }

    /** Versions looked for past the hint before the table is refused (a writer is one or two ahead). */
    static final int VERSIONS_PAST_HINT = 1000;

    /**
     * The metadata file of the last version from {@code version} on ({@code FOLDER/vN.metadata.json},
     * {@code version}'s existing): each next one looked for in turn, at most {@link #VERSIONS_PAST_HINT}.
     */
    static String latestFrom(String folder, long version, ObjectStore store) {
        long v = version;
        while (exists(folder + "v" + (v + 1) + ".metadata.json", store)) {
            if (++v - version > VERSIONS_PAST_HINT) {
                throw new IllegalArgumentException(Urls.redact(folder) + " holds more than " + VERSIONS_PAST_HINT
                        + " metadata versions past its version-hint.text (" + version + "): not read; name the"
                        + " metadata file to read");
            }
        }
        return folder + "v" + v + ".metadata.json";
    }

    private static String hint(String folder, ObjectStore store) {
        String url = folder + "version-hint.text";
        byte[] bytes;
        if (store != null) {
            if (LakehouseMarkers.statIfThere(store, url) == null) {
                return null;
            }
            bytes = store.readBytes(url, VERSION_HINT_BYTES);
        } else {
            Path p = PositionedFile.local(url);
            if (!Files.isRegularFile(p)) {
                return null;
            }
            try {
                ReadLimits.checkSize(p.toString(), Files.size(p), VERSION_HINT_BYTES);
                bytes = Files.readAllBytes(p);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + p + ": " + e.getMessage(), e);
            }
        }
        String text = new String(bytes, StandardCharsets.UTF_8).trim();
        return text.chars().allMatch(Character::isDigit) && !text.isEmpty() && text.length() <= 18 ? text : null;
    }

    static boolean exists(String location, ObjectStore store) {
        return store != null
                ? LakehouseMarkers.statIfThere(store, location) != null
                : Files.isRegularFile(PositionedFile.local(location));
    }

    /** The table's folder, where its metadata file is {@code FOLDER/metadata/NAME}: its files are looked for under it. */
    static String tableFolderOf(String metadataFile) {
        int slash = metadataFile.lastIndexOf('/');
        String dir = slash < 0 ? "." : metadataFile.substring(0, slash);
        if (!dir.endsWith("/metadata") && !dir.equals("metadata")) {
            return null; // metadata written elsewhere (write.metadata.path): its paths are read as they are
        }
        String folder = dir.substring(0, dir.length() - "metadata".length());
        return folder.isEmpty() ? "./" : folder;
    }

    /** A {@code file:} URI as a local path, as stoke-parquet opens local files; a URL or path as it is. */
    private static String localOrUrl(String location) {
        return location.startsWith("file:") ? PositionedFile.local(location).toString() : location;
    }

    private static String slashed(String location) {
        return location.endsWith("/") ? location : location + "/";
    }

    /** Iceberg's version, from its build's properties. */
    static String icebergVersion() {
        return org.apache.iceberg.IcebergBuild.version();
    }
}
