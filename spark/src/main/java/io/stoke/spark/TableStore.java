package io.stoke.spark;

import io.stoke.lakehouse.OutputTable;
import io.stoke.loader.source.Datasets;
import io.stoke.remote.ObjectStore;
import java.nio.file.Path;
import java.util.Set;

/**
 * A job's output, and the only code that names its layout:
 * <pre>
 *   OUT/&lt;shard&gt;.parquet             each committed shard's table (what readers read)
 *   OUT/_committed/&lt;table&gt;.json     each committed shard's {@link CommitMarker}, created at most once
 *   OUT/_attempts/                    task attempts' own files before their commit (local output)
 *   OUT/_manifest.json                the job's {@link Manifest}, written when it ends
 *   OUT/_delta_log/, OUT/metadata/    the table's log, where --output-table made OUT a Delta Lake or
 *                                     Iceberg table (stoke-lakehouse's OutputTable names those)
 * </pre>
 * Spark, pyarrow and DuckDB's {@code OUT/*.parquet} leave the names starting with {@code _} out,
 * so a reader of {@code OUT} sees committed tables only, one per shard.
 */
interface TableStore extends AutoCloseable {
    String COMMITTED = "_committed/";
    String ATTEMPTS = "_attempts/";
    String MANIFEST = "_manifest.json";

    /** The store of {@code out}: a local (or shared) folder, or an {@code s3://} prefix. */
    static TableStore of(String out) {
        return Datasets.isUrl(out) ? S3TableStore.open(out) : new LocalTableStore(Path.of(out));
    }

    /** The folder an attempt writes its table into before {@link #commit}: local, its own. */
    Path attemptFolder(long attemptId);

    /** How a marker names the attempt's {@code file}: relative to a local output; null on S3 (nothing to repair from). */
    String attemptName(Path file);

    /**
     * Commits {@code table} (written by an attempt in {@code file}) with {@code marker}: creates
     * the marker where none is, then puts the file in place as the shard's table. False when
     * another attempt's marker was there: this attempt's file is deleted, the other's stands.
     */
    boolean commit(String table, Path file, CommitMarker marker);

    /** Whether {@code table} has a commit marker (one question to the store). */
    boolean isCommitted(String table);

    /** The tables with a commit marker. */
    Set<String> committed();

    /** The tables in place. */
    Set<String> tables();

    /** The marker of {@code table}. */
    CommitMarker marker(String table);

    /**
     * A commit interrupted between its marker and its table (the attempt's executor lost): puts
     * the attempt's file in place where it survives and returns true; else removes the marker
     * (the shard is then embedded again) and returns false.
     */
    boolean repair(String table);

    /** The size in bytes of {@code table}, in place. */
    long size(String table);

    /** Where the tables are, as {@link OutputTable} takes a table's folder: a local folder or an {@code s3://} prefix. */
    String location();

    /** The store of an {@code s3://} output; null for a local one. */
    ObjectStore objectStore();

    /** Writes the job's manifest, replacing an earlier run's. */
    void writeManifest(byte[] json);

    /**
     * Null when markers are created at most once here; else, in one sentence, what happens instead
     * (an S3-compatible store without conditional writes). Asked once, by the driver, which says it.
     */
    String atMostOnceCaveat();

    /** Where this store is, for messages. */
    String where();

    @Override
    void close();
}
