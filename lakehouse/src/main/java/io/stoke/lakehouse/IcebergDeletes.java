package io.stoke.lakehouse;

import io.delta.kernel.data.ColumnVector;
import io.delta.kernel.data.ColumnarBatch;
import io.delta.kernel.engine.FileReadResult;
import io.delta.kernel.internal.util.Utils;
import io.delta.kernel.types.LongType;
import io.delta.kernel.types.StringType;
import io.delta.kernel.types.StructType;
import io.delta.kernel.utils.CloseableIterator;
import io.delta.kernel.utils.FileStatus;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.Urls;
import io.stoke.remote.ObjectStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.deletes.PositionDeleteIndex;

/**
 * The rows of an Iceberg snapshot's data files that its row-level deletes delete, as a merge-on-read
 * reader applies them: a data file's deletion vector (format 3: a bitmap in a Puffin file, read by a
 * ranged read of its blob and Iceberg's own {@link PositionDeleteIndex}) and its position delete files
 * (format 2: Parquet files of {@code file_path} and {@code pos}, read by the Parquet reader that reads
 * Delta Lake's checkpoints, {@link KernelEngine}; one may delete rows of many data files, so each is
 * read once). Which delete files apply to which data file is Iceberg's scan's (their sequence
 * numbers, partitions). Equality deletes, which match rows by their values, are refused: Stoke does
 * not read the columns they name. The rows held are bounded as Delta Lake's deletion vectors' are
 * ({@link TableSnapshot#MAX_DELETED_ROWS}), by the delete files' own counts, before they are read.
 */
final class IcebergDeletes {
    private static final StructType POSITIONS =
            new StructType().add("file_path", StringType.STRING).add("pos", LongType.LONG);

    private final String shown;
    private final IcebergFileIO io;
    private final ObjectStore store;
    private final KernelEngine engine;
    /** Each position delete file read: the rows it deletes, by the data file's path as its rows name it. */
    private final Map<String, Map<String, long[]>> positionFiles = new HashMap<>();

    private long held; // rows of delete files counted so far

    IcebergDeletes(String shown, IcebergFileIO io, ObjectStore store) {
        this.shown = shown;
        this.io = io;
        this.store = store;
        this.engine = new KernelEngine(new KernelFileIO(store));
    }

    /** The rows of {@code task}'s data file its deletes delete, ascending, each once (none: empty). */
    long[] deletedRows(FileScanTask task) {
        List<DeleteFile> deletes = task.deletes();
        if (deletes.isEmpty()) {
            return new long[0];
        }
        String dataFile = task.file().location();
        long[] rows = new long[0];
        for (DeleteFile d : deletes) {
            long[] more;
            if (d.content() == FileContent.EQUALITY_DELETES) {
                throw new IllegalArgumentException(shown + ": " + Urls.redact(dataFile) + " has equality deletes ("
                        + Urls.redact(d.location())
                        + "), which delete rows by the values of columns Stoke does not read:"
                        + " not read; rewrite the data files without them (Spark's CALL"
                        + " system.rewrite_data_files with delete-file-threshold=1) and read that snapshot");
            } else if (d.format() == FileFormat.PUFFIN) {
                more = deletionVector(dataFile, d);
            } else if (d.format() == FileFormat.PARQUET) {
                more = positionFile(d).getOrDefault(dataFile, new long[0]);
            } else {
                throw new IllegalArgumentException(shown + ": the position delete file " + Urls.redact(d.location())
                        + " is " + d.format() + ", and Stoke reads Parquet's: not read");
            }
            rows = union(rows, more);
        }
        return rows;
    }

    /** A data file's deletion vector: its blob, at the offset and of the size the manifest gives. */
    private long[] deletionVector(String dataFile, DeleteFile dv) {
        count(dv);
        Long offset = dv.contentOffset();
        Long size = dv.contentSizeInBytes();
        if (offset == null || size == null || offset < 0) {
            throw new IllegalArgumentException(shown + ": the deletion vector of " + Urls.redact(dataFile)
                    + " has no blob offset and size in its manifest: not read");
        }
        if (size < 0 || size > ReadLimits.DELETION_VECTOR) {
            throw new IllegalArgumentException(shown + ": the deletion vector of " + Urls.redact(dataFile) + " "
                    + ReadLimits.exceeds("a deletion vector", size, ReadLimits.DELETION_VECTOR) + ": not read");
        }
        byte[] blob = new byte[Math.toIntExact(size)];
        String at = io.relocated(dv.location());
        if (offset + size > dv.fileSizeInBytes()) {
            throw new IllegalArgumentException(
                    shown + ": the deletion vector of " + Urls.redact(dataFile) + " lies past the end"
                            + " of its file " + Urls.redact(at) + " (" + (offset + size) + " > " + dv.fileSizeInBytes()
                            + " bytes): not read");
        }
        try (PositionedFile file = PositionedFile.open(at, dv.fileSizeInBytes(), store)) {
            file.pos = offset;
            file.readFully(blob, 0, blob.length);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    shown + ": cannot read the deletion vector of " + Urls.redact(dataFile) + " in " + Urls.redact(at)
                            + ": " + e.getMessage(),
                    e);
        }
        PositionDeleteIndex index;
        try {
            index = PositionDeleteIndex.deserialize(blob, dv);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    shown + ": the deletion vector of " + Urls.redact(dataFile) + " in " + Urls.redact(at)
                            + " is not one Iceberg reads: " + e.getMessage(),
                    e);
        }
        // Checked before the rows are held: a few bytes of bitmap runs can name billions of rows, and the
        // manifest's count is what count() bounded.
        if (index.cardinality() != dv.recordCount()) {
            throw new IllegalArgumentException(shown + ": the deletion vector of " + Urls.redact(dataFile) + " holds "
                    + index.cardinality() + " rows, and its manifest says " + dv.recordCount() + ": not read");
        }
        long[] rows = new long[Math.toIntExact(dv.recordCount())];
        int[] n = {0};
        index.forEach(pos -> rows[n[0]++] = pos);
        Arrays.sort(rows);
        return rows;
    }

    /** A position delete file's rows, read once, by the data file each names. */
    private Map<String, long[]> positionFile(DeleteFile d) {
        Map<String, long[]> read = positionFiles.get(d.location());
        if (read != null) {
            return read;
        }
        count(d);
        Map<String, long[]> byFile = new HashMap<>();
        Map<String, Integer> used = new HashMap<>();
        long seen = 0;
        String at = io.relocated(d.location());
        FileStatus status = FileStatus.of(at, d.fileSizeInBytes(), 0);
        try (CloseableIterator<FileReadResult> batches = engine.getParquetHandler()
                .readParquetFiles(Utils.singletonCloseableIterator(status), POSITIONS, Optional.empty())) {
            while (batches.hasNext()) {
                ColumnarBatch batch = batches.next().getData();
                ColumnVector paths = batch.getColumnVector(0);
                ColumnVector positions = batch.getColumnVector(1);
                for (int r = 0; r < batch.getSize(); r++) {
                    if (paths.isNullAt(r) || positions.isNullAt(r)) {
                        throw new IllegalArgumentException(shown + ": the position delete file " + Urls.redact(at)
                                + " has a row without file_path or pos: not read");
                    }
                    if (++seen > d.recordCount()) {
                        // More rows than count() bounded: refused before they are held.
                        throw new IllegalArgumentException(shown + ": the position delete file " + Urls.redact(at)
                                + " holds more rows than its manifest's " + d.recordCount() + ": not read");
                    }
                    String path = paths.getString(r);
                    long[] rows = byFile.computeIfAbsent(path, p -> new long[16]);
                    int n = used.getOrDefault(path, 0);
                    if (n == rows.length) {
                        rows = Arrays.copyOf(rows, n * 2);
                        byFile.put(path, rows);
                    }
                    rows[n] = positions.getLong(r);
                    used.put(path, n + 1);
                }
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof IllegalArgumentException) {
                throw (IllegalArgumentException) e;
            }
            throw new IllegalArgumentException(
                    shown + ": cannot read the position delete file " + Urls.redact(at) + ": " + e.getMessage(), e);
        }
        byFile.replaceAll((path, rows) -> {
            long[] sorted = Arrays.copyOf(rows, used.get(path));
            Arrays.sort(sorted);
            return dedupe(sorted); // a row deleted twice in one file is deleted once
        });
        positionFiles.put(d.location(), byFile);
        return byFile;
    }

    /** Counts a delete file's rows against the bound before it is read. */
    private void count(DeleteFile d) {
        held += d.recordCount();
        if (held > TableSnapshot.MAX_DELETED_ROWS) {
            throw new IllegalArgumentException(String.format(
                    Locale.ROOT,
                    "%s: its row-level deletes delete more than %,d rows (%,d up to %s), which Stoke holds"
                            + " at 8 bytes each while it reads: not read; rewrite its data files without them"
                            + " (Spark's CALL system.rewrite_data_files with delete-file-threshold=1)",
                    shown,
                    TableSnapshot.MAX_DELETED_ROWS,
                    held,
                    d.location()));
        }
    }

    /** The ascending union of two ascending arrays of rows each once, each row once; neither is changed. */
    static long[] union(long[] a, long[] b) {
        if (b.length == 0) {
            return a;
        }
        long[] out = new long[a.length + b.length];
        int i = 0;
        int j = 0;
        int n = 0;
        while (i < a.length || j < b.length) {
            long next = j >= b.length || (i < a.length && a[i] <= b[j]) ? a[i++] : b[j++];
            if (n == 0 || out[n - 1] != next) {
                out[n++] = next;
            }
        }
        return Arrays.copyOf(out, n);
    }

    /** {@code sorted}, which is its own, each row once. */
    private static long[] dedupe(long[] sorted) {
        int n = 0;
        for (int i = 0; i < sorted.length; i++) {
            if (n == 0 || sorted[n - 1] != sorted[i]) {
                sorted[n++] = sorted[i];
            }
        }
        return n == sorted.length ? sorted : Arrays.copyOf(sorted, n);
    }
}
