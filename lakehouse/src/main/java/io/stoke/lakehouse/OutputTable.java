package io.stoke.lakehouse;

import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Datasets;
import io.stoke.remote.LakehouseMarkers;
import io.stoke.remote.ObjectStore;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.function.ToLongFunction;
import org.apache.parquet.schema.MessageType;

/**
 * A folder of Parquet files that Stoke wrote, made a lakehouse table: each call appends the files the
 * table does not hold yet, in one commit of the table's own library (Delta Kernel's transaction,
 * Iceberg's {@code AppendFiles}), creating the table at the first. The files stay where they are,
 * named by the table's log; a rerun adds only what it committed since, so the table holds each
 * file once. What {@code stoke spark-embed --output-table} does at the end of a job.
 *
 * <p>The log is the table's alone: Delta Lake's {@code _delta_log/}, or Iceberg's {@code metadata/}
 * with Hadoop's layout ({@code vN.metadata.json} and {@code version-hint.text}, which Spark's
 * {@code HadoopCatalog} and Stoke's reader open with no catalog). Each version is created at most
 * once ({@link LogFiles}), locally or on {@code s3://}, so of two drivers committing at once one
 * reads the table again and adds what is still missing.
 */
public final class OutputTable {
    private OutputTable() {}

    /** A table format Stoke appends to. */
    public enum Format {
        DELTA("Delta Lake"),
        ICEBERG("Apache Iceberg");

        private final String title;

        Format(String title) {
            this.title = title;
        }

        /** The format's name in prose. */
        public String title() {
            return title;
        }

        /** The name with its article, in prose: "a Delta Lake", "an Apache Iceberg". */
        public String withArticle() {
            return (title.startsWith("A") ? "an " : "a ") + title;
        }

        /** {@code delta} or {@code iceberg}, as options spell it. */
        public static Format parse(String name) {
            return switch (name.toLowerCase(Locale.ROOT)) {
                case "delta" -> DELTA;
                case "iceberg" -> ICEBERG;
                default ->
                    throw new IllegalArgumentException("no table format " + name
                            + ": delta or iceberg (leave the option out for Parquet files only)");
            };
        }
    }

    /**
     * A Parquet file in the table's folder.
     *
     * @param name its name under the folder
     * @param rows its rows
     */
    public record DataFile(String name, long rows) {}

    /**
     * What an append did.
     *
     * @param format  the table's format
     * @param version the table's version after it (Delta Lake's version, Iceberg's snapshot id)
     * @param added   files this append added (0: the table held every file given, and no version was made)
     * @param files   files in the table after it
     */
    public record Appended(Format format, long version, int added, int files) {
        /** In words: "Delta Lake table at version 3 (2 files added, 12 in all)". */
        public String describe() {
            return format.title() + " table at " + (format == Format.DELTA ? "version " : "snapshot ") + version + " ("
                    + added + (added == 1 ? " file" : " files") + " added, " + files + " in all)";
        }
    }

    /**
     * The format of the table at {@code location}, or null where its folder holds no table's log.
     *
     * @param store the store of a location at a URL (null: local)
     */
    public static Format at(String location, ObjectStore store) {
        String format = Datasets.isUrl(location)
                ? LakehouseMarkers.formatAt(TableSnapshot.trimSlash(location) + "/", store)
                : Datasets.lakehouseFolder(Path.of(location));
        if (format == null) {
            return null;
        }
        return format.equals(Datasets.DELTA) ? Format.DELTA : Format.ICEBERG;
    }

    /**
     * Appends to the {@code format} table at {@code location} those of {@code files} it does not hold,
     * creating it with {@code schema} where there is none.
     *
     * @param location the table's folder, where {@code files} are: a local folder or an {@code s3://} prefix
     * @param schema   the files' schema (every file's the same)
     * @param sizes    a file's size in bytes, by its name: asked of the files added alone
     * @param store    the store of a location at a URL (null: local)
     */
    public static Appended append(
            Format format,
            String location,
            MessageType schema,
            List<DataFile> files,
            ToLongFunction<String> sizes,
            ObjectStore store) {
        Format found = at(location, store);
        if (found != null && found != format) {
            throw new IllegalArgumentException(Urls.redact(location) + " is a " + found.title() + " table: not made a "
                    + format.title() + " one too");
        }
        String root = TableSnapshot.trimSlash(
                Datasets.isUrl(location)
                        ? location
                        : Path.of(location).toAbsolutePath().toString());
        TableColumnTypes columns = TableColumnTypes.of(schema);
        return switch (format) {
            case DELTA -> DeltaAppend.append(root, columns, files, sizes, store);
            case ICEBERG -> IcebergAppend.append(root, columns, files, sizes, store);
        };
    }
}
