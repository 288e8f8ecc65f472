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
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The Parquet output of {@code stoke embed --format parquet} in {@code DIR}: one
 * {@link EmbeddingTable} per shard, {@code DIR/<shard name without .tar>.parquet} (the files
 * {@code stoke spark-embed} writes for the same shards), or {@code DIR/embeddings.parquet} for a
 * folder or list of files. Rows must come in dataset order, as a loader without shuffling delivers
 * them. Each table is written as {@code DIR/.NAME.partial} and renamed into place when its shard's
 * last row is written, so a file in place is a whole shard's; {@link #close()} before
 * {@link #commit()} deletes the table being written.
 */
public final class EmbeddingTables implements EmbeddingSink, AutoCloseable {
    /** The table of a folder or list of files, which has no shards. */
    public static final String FILES_TABLE = "embeddings.parquet";

    private final Path dir;
    private final Dataset dataset;
    private final Shards shards; // null for files
    private final int[] rows;
    private final long dimension;
    private final UnaryOperator<String> fileName;
    private EmbeddingTable table;
    private int tableShard = -1;
    private int tableEnd; // the first row past the open table's shard
    private long next;
    private boolean committed;
    private final List<Path> written = new ArrayList<>();

    private EmbeddingTables(Path dir, Dataset dataset, int[] rows, long dimension, UnaryOperator<String> fileName) {
        this.dir = dir;
        this.fileName = fileName;
        this.dataset = dataset;
        this.shards = dataset instanceof ShardDataset s ? s.shards() : null;
        this.rows = rows;
        this.dimension = dimension;
    }

    /**
     * Tables for {@code rows} (sorted dataset indices, every sample of each shard they touch) of
     * {@code dataset} in {@code dir} (created when missing). Refuses a folder that already holds
     * one of these tables unless {@code overwrite}, and shards whose names would give one file.
     */
    public static EmbeddingTables create(Path dir, Dataset dataset, int[] rows, long dimension, boolean overwrite)
            throws IOException {
        Files.createDirectories(dir);
        for (String name : tableNames(dataset)) {
            Path file = dir.resolve(name);
            if (!overwrite && Files.exists(file)) {
                throw new IllegalStateException(file + " exists (a finished run); --overwrite replaces it");
            }
        }
        return new EmbeddingTables(dir, dataset, rows, dimension, name -> name);
    }

    /**
     * Tables as {@link #create}, each in {@code dir/fileName(table name)}, whatever is there
     * replaced: for a writer that puts the files in place itself (one task attempt's file).
     */
    public static EmbeddingTables into(
            Path dir, Dataset dataset, int[] rows, long dimension, UnaryOperator<String> fileName) throws IOException {
        Files.createDirectories(dir);
        return new EmbeddingTables(dir, dataset, rows, dimension, fileName);
    }

    /**
     * A shard's value of the {@code shard} column: its file name (the last part of its path or
     * URL), which names it within its folder or prefix.
     */
    public static String shardColumn(String shardName) {
        int slash = Math.max(shardName.lastIndexOf('/'), shardName.lastIndexOf('\\'));
        return shardName.substring(slash + 1);
    }

    /** The table file of a shard: its file name, {@code .tar} replaced by {@code .parquet}. */
    public static String tableName(String shardColumn) {
        String base = shardColumn.toLowerCase(Locale.ROOT).endsWith(".tar")
                ? shardColumn.substring(0, shardColumn.length() - 4)
                : shardColumn;
        return base + ".parquet";
    }

    /** Every table {@code dataset} gives, in shard order; refuses two shards with one file name. */
    public static List<String> tableNames(Dataset dataset) {
        if (!(dataset instanceof ShardDataset s)) {
            return List.of(FILES_TABLE);
        }
        Shards shards = s.shards();
        List<String> names = new ArrayList<>(shards.shardCount());
        Map<String, String> seen = new HashMap<>();
        for (int i = 0; i < shards.shardCount(); i++) {
            String name = tableName(shardColumn(shards.shardName(i)));
            String other = seen.put(name, shards.shardName(i));
            if (other != null) {
                throw new IllegalArgumentException("shards " + other + " and " + shards.shardName(i)
                        + " have one file name, so their tables would be one file (" + name + ")");
            }
            names.add(name);
        }
        return names;
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
                            shardName(),
                            key(sample),
                            position(sample),
                            dataset.label(sample),
                            values,
                            4L * dimension * i);
            advance();
        }
    }

    @Override
    public void skip(long row, String path, String reason) {
        int sample = sampleOf(row);
        tableOf(sample).appendFailed(shardName(), key(sample), position(sample), dataset.label(sample), reason);
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
        int shard = shards == null ? 0 : shards.shardOf(sample);
        if (table != null && shard == tableShard) {
            return table;
        }
        if (table != null) {
            throw new IllegalStateException(
                    "shard " + tableShard + " ended at row " + next + " before its last sample");
        }
        int first = shards == null ? 0 : shards.firstSample(shard);
        int end = shards == null ? dataset.size() : first + shards.samples(shard);
        if (rows[(int) next] != first
                || next + (end - first) > rows.length
                || rows[(int) next + (end - first) - 1] != end - 1) {
            throw new IllegalArgumentException("a Parquet table holds a whole shard: this run's rows hold part of "
                    + (shards == null ? "the dataset" : shards.shardName(shard))
                    + " (--rank/--world-size split shards)");
        }
        tableShard = shard;
        tableEnd = (int) next + (end - first);
        table = EmbeddingTable.create(partial(), dimension);
        return table;
    }

    private String name() {
        return shards == null ? FILES_TABLE : tableName(shardColumn(shards.shardName(tableShard)));
    }

    private String shardName() {
        return shards == null ? "" : shardColumn(shards.shardName(tableShard));
    }

    private String key(int sample) {
        return shards == null ? dataset.name(sample) : shards.key(sample);
    }

    private long position(int sample) {
        return shards == null ? sample : sample - shards.firstSample(tableShard);
    }

    private Path partial() {
        return dir.resolve("." + fileName.apply(name()) + ".partial");
    }

    private void finishTable() {
        if (table == null) {
            return;
        }
        table.close();
        table = null;
        Path done = dir.resolve(fileName.apply(name()));
        try {
            Files.move(partial(), done, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot put " + done + " in place", e);
        }
        written.add(done);
    }

    /** Without a {@link #commit()}, deletes the table being written; whole shards' tables stay. */
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
