package io.stoke.lakehouse;

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
 */
public record TableSnapshot(
        String format, String location, long version, Instant committed, List<ParquetDatasets.TableFile> files) {
    public TableSnapshot {
        files = List.copyOf(files);
    }

    /** The spec that names this snapshot alone ({@code TABLE@v12}): what a resumed job opens. */
    public String pinnedSpec() {
        return location + "@v" + version;
    }

    /** One line for the log: which table, which version, committed when, how many files. */
    public String describe() {
        return location + ": " + format.substring(format.indexOf(' ') + 1) + " table at version " + version
                + " (committed " + committed + "), " + files.size() + " data file" + (files.size() == 1 ? "" : "s");
    }
}
