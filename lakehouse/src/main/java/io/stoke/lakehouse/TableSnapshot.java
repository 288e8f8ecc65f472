package io.stoke.lakehouse;

import io.stoke.loader.source.Datasets;
import io.stoke.parquet.ParquetDatasets;
import java.time.Instant;
import java.util.List;

/**
 * One snapshot of a lakehouse table, as its log gives it: the data files that hold its rows, in
 * path order, and nothing else of the folder.
 *
 * @param format the table's format, with its article ({@code Datasets.DELTA} or {@code Datasets.ICEBERG})
 * @param location the table's root (a local path or a URL)
 * @param version the snapshot's version (Delta's log version, Iceberg's snapshot id)
 * @param committed when the snapshot was committed
 * @param files its data files
 * @param detail what else the log line says of how it was read (Iceberg's metadata file), or ""
 */
public record TableSnapshot(
        String format,
        String location,
        long version,
        Instant committed,
        List<ParquetDatasets.TableFile> files,
        String detail) {
    /**
     * The most rows a snapshot's deletes (Delta Lake's deletion vectors, Iceberg's row-level deletes)
     * may delete: each is held as a row index (8 bytes) for as long as the dataset is open, in a heap
     * of 384 MiB (cli/jvm.options), so 64 MiB of them.
     */
    static final long MAX_DELETED_ROWS = 1L << 23;

    public TableSnapshot {
        files = List.copyOf(files);
    }

    /** {@code location} without its trailing '/'s: a table's root as its snapshot names it. */
    static String trimSlash(String location) {
        String s = location;
        while (s.length() > 1 && s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    /** The spec that names this snapshot alone ({@code TABLE@v12}): what a resumed job opens. */
    public String pinnedSpec() {
        return location + "@v" + version;
    }

    /** Its data files whose rows the log partly deletes (Delta Lake's deletion vectors, Iceberg's row-level deletes). */
    public int filesWithDeletedRows() {
        return (int) files.stream().filter(f -> f.deletedRows().length > 0).count();
    }

    /** One line for the log: which table, which version, committed when, how many files, how many rows deleted in them. */
    public String describe() {
        long deleted = files.stream().mapToLong(f -> f.deletedRows().length).sum();
        int partly = filesWithDeletedRows();
        return location + ": " + format.substring(format.indexOf(' ') + 1) + " table at "
                + (format.equals(Datasets.ICEBERG) ? "snapshot " : "version ") + version
                + " (committed " + committed + "), " + files.size() + " data file" + (files.size() == 1 ? "" : "s")
                + (partly == 0
                        ? ""
                        : ", " + deleted + " row" + (deleted == 1 ? "" : "s") + " of " + partly + " of them deleted"
                                + (format.equals(Datasets.ICEBERG) ? " by row-level deletes" : " by deletion vectors")
                                + " (left out)")
                + (detail.isEmpty() ? "" : "; " + detail);
    }
}
