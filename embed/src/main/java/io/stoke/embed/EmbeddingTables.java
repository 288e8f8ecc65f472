package io.stoke.embed;

import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The Parquet output of {@code stoke embed --format parquet} in {@code DIR}: one
 * {@link EmbeddingTable} per input file ({@link InputFile}), {@code DIR/<tar shard's name without
 * .tar>.parquet} or {@code DIR/<Parquet file's name>} (the files {@code stoke spark-embed} writes
 * for the same input), or {@code DIR/embeddings.parquet} for a folder or list of images. Rows must
 * come in dataset order, as a loader without shuffling delivers them. Each table is written as
 * {@code DIR/.NAME.partial} and renamed into place when its file's last row is written, so a table
 * in place holds a whole input file; {@link #close()} before {@link #commit()} deletes the table
 * being written.
 */
public final class EmbeddingTables implements EmbeddingSink, AutoCloseable {
    private final Path dir;
    private final Dataset dataset;
    private final Shards shards; // null for a folder or list of images
    private final List<InputFile> files;
    private final int[] rows;
    private final long dimension;
    private final UnaryOperator<String> fileName;
    private EmbeddingTable table;
    private InputFile tableFile; // the open table's input file
    private long tableEnd; // the first row past the open table's file
    private long next;
    private boolean committed;
    private final List<Path> written = new ArrayList<>();

    private EmbeddingTables(Path dir, Dataset dataset, int[] rows, long dimension, UnaryOperator<String> fileName) {
        this.dir = dir;
        this.fileName = fileName;
        this.dataset = dataset;
        this.shards = dataset instanceof ShardDataset s ? s.shards() : null;
        this.files = InputFile.of(dataset);
        this.rows = rows;
        this.dimension = dimension;
    }

    /**
     * Tables for {@code rows} (sorted dataset indices, every sample of each input file they touch)
     * of {@code dataset} in {@code dir} (created when missing). Refuses a folder that already holds
     * one of these tables unless {@code overwrite}, and input files whose names would give one table.
     */
    public static EmbeddingTables create(Path dir, Dataset dataset, int[] rows, long dimension, boolean overwrite)
            throws IOException {
        EmbeddingTables tables = new EmbeddingTables(dir, dataset, rows, dimension, name -> name);
        Files.createDirectories(dir);
        for (InputFile f : tables.files) {
            Path file = dir.resolve(f.table());
            if (!overwrite && Files.exists(file)) {
                throw new IllegalStateException(file + " exists (a finished run); --overwrite replaces it");
            }
        }
        return tables;
    }

    /**
     * Tables as {@link #create}, each in {@code dir/fileName(table name)}, whatever is there
     * replaced: for a writer that puts the files in place itself (one task attempt's file).
     */
    public static EmbeddingTables into(
            Path dir, Dataset dataset, int[] rows, long dimension, UnaryOperator<String> fileName) throws IOException {
        EmbeddingTables tables = new EmbeddingTables(dir, dataset, rows, dimension, fileName);
        Files.createDirectories(dir);
        return tables;
    }

    @Override
    public void writeRows(long first, int count, MemorySegment values) {
        if (values.byteSize() != 4L * count * dimension) {
            throw new IndexOutOfBoundsException(values.byteSize() + " bytes for " + count + " rows of " + dimension);
        }
        for (int i = 0; i < count; i++) {
            int sample = sampleOf(first + i);
            tableOf(sample)
                    .append(
                            tableFile.shard(),
                            key(sample),
                            sample - tableFile.firstSample(),
                            dataset.label(sample),
                            values,
                            4L * dimension * i);
            advance();
        }
    }

    @Override
    public void skip(long row, String path, String reason) {
        int sample = sampleOf(row);
        tableOf(sample)
                .appendFailed(
                        tableFile.shard(),
                        key(sample),
                        sample - tableFile.firstSample(),
                        dataset.label(sample),
                        reason);
        advance();
    }

    /** Checks that all rows came, and the last table is in place. */
    public void commit() {
        if (next != rows.length) {
            throw new IllegalStateException("the loader delivered " + next + " of " + rows.length + " rows");
        }
        finishTable();
        committed = true;
    }

    /** The tables put in place, in order. */
    public List<Path> written() {
        return written;
    }

    private int sampleOf(long row) {
        if (row != next) {
            throw new IllegalStateException("row " + row + " came after row " + (next - 1)
                    + ": Parquet tables take rows in dataset order" + " (a loader without --shuffle)");
        }
        return rows[(int) row];
    }

    private void advance() {
        next++;
        if (next == tableEnd) {
            finishTable();
        }
    }

    private EmbeddingTable tableOf(int sample) {
        if (table != null && tableFile.holds(sample)) {
            return table;
        }
        if (table != null) {
            throw new IllegalStateException(tableFile.table() + " ended at row " + next + " before its last sample");
        }
        InputFile file = fileOf(sample);
        long end = next + file.samples();
        if (sample != file.firstSample()
                || end > rows.length
                || rows[(int) end - 1] != file.firstSample() + file.samples() - 1) {
            throw new IllegalArgumentException("a Parquet table holds a whole input file: this run's rows hold part of "
                    + (shards == null ? "the dataset" : file.path()) + " (--rank/--world-size split input files)");
        }
        tableFile = file;
        tableEnd = end;
        // A crashed run's table removed (a link there too, not followed); then made with O_EXCL.
        try {
            Files.deleteIfExists(partial());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + partial(), e);
        }
        table = EmbeddingTable.create(partial(), dimension);
        return table;
    }

    /** The input file holding {@code sample}: the last one starting at or before it (empty files hold nothing). */
    private InputFile fileOf(int sample) {
        int lo = 0;
        int hi = files.size() - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (files.get(mid).firstSample() <= sample) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return files.get(lo);
    }

    private String key(int sample) {
        return shards == null ? dataset.name(sample) : shards.key(sample);
    }

    private Path partial() {
        return dir.resolve("." + fileName.apply(tableFile.table()) + ".partial");
    }

    private void finishTable() {
        if (table == null) {
            return;
        }
        table.close();
        table = null;
        Path done = dir.resolve(fileName.apply(tableFile.table()));
        try {
            Files.move(partial(), done, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot put " + done + " in place", e);
        }
        written.add(done);
    }

    /** Without a {@link #commit()}, deletes the table being written; whole input files' tables stay. */
    @Override
    public void close() throws IOException {
        if (!committed && table != null) {
            try {
                table.close();
            } catch (UncheckedIOException e) {
                // deleted below either way
            }
            table = null;
            Files.deleteIfExists(partial());
        }
    }
}
