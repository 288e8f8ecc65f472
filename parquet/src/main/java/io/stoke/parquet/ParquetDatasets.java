package io.stoke.parquet;

import io.stoke.loader.internal.SafeFiles;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.TableDatasetProvider;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Parquet datasets read in place: the Hugging Face Hub's layout (an image struct
 * {@code struct<bytes: binary, path: string>} and an int64 {@code label}), img2dataset's (a binary
 * {@code jpg} column beside {@code key} and {@code caption}), and Spark tables; local files, or
 * objects at {@code s3://} and {@code http(s)://}. Each row is a sample, in file then row order;
 * each row group is a shard, loaded into the bounded shard cache when one of its rows is read
 * ({@link RowGroupCache}): locally from the mapped file, remotely by ranged GETs of the image (label,
 * key) column chunks alone. Opening reads only the files' footers, or one {@link ParquetCatalog}.
 *
 * <p>Found by {@link Datasets#openLocalOrUrl(String, UrlDatasetProvider.ShardCache, TableColumns)} through
 * {@code META-INF/services}; {@link #open(String, TableColumns, long)} is the same for Java callers.
 */
public final class ParquetDatasets implements TableDatasetProvider {
    /** For the service loader. */
    public ParquetDatasets() {}

    @Override
    public Dataset open(String spec, TableColumns columns, UrlDatasetProvider.ShardCache shardCache) {
        return open(spec, columns, shardCache.bytes());
    }

    /**
     * The Parquet dataset at {@code spec}: a file, a brace pattern or glob, or a folder, local or at
     * a URL.
     *
     * @param cacheBytes how many bytes of loaded row groups the shard cache holds at once
     */
    public static ShardDataset open(String spec, TableColumns columns, long cacheBytes) {
        if (Datasets.isUrl(spec)) {
            ObjectStore store = ObjectStore.forUrl(spec, RemoteOptions.defaults());
            try {
                return dataset(RemoteParquet.sources(spec, store), columns, cacheBytes, store, true);
            } catch (RuntimeException | Error e) {
                store.close();
                throw e;
            }
        }
        Arena mappings = Arena.ofShared();
        try {
            List<ParquetTable.Source> sources = new ArrayList<>();
            for (Path p : ParquetFiles.expandOutsideTables(spec)) {
                sources.add(new ParquetTable.Source(p.toString(), new MappedInputFile(p, mappings), null));
            }
            return dataset(sources, columns, cacheBytes, mappings, false);
        } catch (RuntimeException | Error e) {
            mappings.close();
            throw e;
        }
    }

    /**
     * A data file of a table's snapshot, as the table's log gives it: where it is (a path or a URL),
     * its size in bytes, and the rows of it the snapshot has deleted (a Delta Lake deletion vector's),
     * as row indices in the file, ascending. A deleted row is never a sample: it is left out when its
     * row group loads, and the file's samples are the rest, in row order.
     */
    public record TableFile(String location, long size, long[] deletedRows) {
        /** Deleted rows checked ascending, with no repeat and none negative; the array is the caller's no more. */
        public TableFile {
            deletedRows = deletedRows.clone();
            for (int i = 0; i < deletedRows.length; i++) {
                if (deletedRows[i] < 0 || (i > 0 && deletedRows[i] <= deletedRows[i - 1])) {
                    throw new IllegalArgumentException(
                            location + ": the deleted rows are not ascending row indices (" + deletedRows[i] + ")");
                }
            }
        }

        /** A data file none of whose rows is deleted. */
        public TableFile(String location, long size) {
            this(location, size, ParquetTable.NONE_DELETED);
        }
    }

    /**
     * The dataset of exactly {@code files}, in this order: the data files a table format's snapshot
     * names (stoke-lakehouse), never a folder's listing. Local paths are mapped; URLs are read through
     * {@code store} by ranged GETs, their sizes taken from the log (no HEAD). A file whose size is not
     * the log's is refused: it changed after the snapshot was written.
     *
     * @param store the store for URLs (null: every file is local); the dataset closes it
     */
    public static ShardDataset openFiles(
            List<TableFile> files, TableColumns columns, long cacheBytes, ObjectStore store) {
        if (files.isEmpty()) {
            throw new IllegalArgumentException("the table's snapshot holds no data files");
        }
        Arena mappings = store == null ? Arena.ofShared() : null;
        AutoCloseable owned = store != null ? store : mappings;
        try {
            List<ParquetTable.Source> sources = new ArrayList<>(files.size());
            for (TableFile f : files) {
                if (Datasets.isUrl(f.location())) {
                    if (store == null) {
                        throw new IllegalArgumentException(
                                f.location() + " is a URL, and no store was given to read it");
                    }
                    sources.add(new ParquetTable.Source(
                            f.location(),
                            new RemoteInputFile(store, f.location(), f.size(), null, null),
                            null,
                            f.deletedRows()));
                } else {
                    Path p = Path.of(f.location());
                    long size;
                    try {
                        size = java.nio.file.Files.size(p);
                    } catch (java.io.IOException e) {
                        throw new IllegalArgumentException(
                                "data file " + p + " of the table's snapshot cannot be read: " + e, e);
                    }
                    if (size != f.size()) {
                        throw new IllegalArgumentException(
                                "data file " + p + " is " + size + " bytes, but the table's log says " + f.size()
                                        + ": it changed after the snapshot was written");
                    }
                    if (mappings == null) {
                        throw new IllegalArgumentException(p + " is local, but the table's other files are at URLs");
                    }
                    sources.add(new ParquetTable.Source(
                            p.toString(), new MappedInputFile(p, mappings), null, f.deletedRows()));
                }
            }
            return dataset(sources, columns, cacheBytes, owned, store != null);
        } catch (RuntimeException | Error e) {
            try {
                owned.close();
            } catch (Exception suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private static ShardDataset dataset(
            List<ParquetTable.Source> sources,
            TableColumns columns,
            long cacheBytes,
            AutoCloseable files,
            boolean remote) {
        ParquetTable table = ParquetTable.open(sources, columns, cacheBytes);
        String[] names = new String[table.shards()];
        for (int s = 0; s < names.length; s++) {
            names[s] = table.shardName(s);
        }
        RowGroupCache rowGroups = new RowGroupCache(table, cacheBytes, files, remote);
        Path root =
                remote ? Path.of("").toAbsolutePath() : parentOf(sources.get(0).name());
        return ShardDataset.of(root, Shards.of(names, table.firstSamples(), rowGroups, table.labelled(), rowGroups));
    }

    private static Path parentOf(String file) {
        Path parent = Path.of(file).toAbsolutePath().getParent();
        return parent != null ? parent : Path.of("").toAbsolutePath();
    }

    /**
     * {@code stoke catalog} for Parquet: reads every file's footer once and writes {@value
     * ParquetCatalog#FILE} into the files' folder (the prefix at a URL), names relative to it, so that
     * the dataset then opens from that one file. Returns where it was written.
     *
     * <p>Local files open from their own footers, read where they are mapped; their catalog is for
     * the folder served over HTTP (which lists nothing) or copied into a store as it is. It carries
     * no ETag, which a server gives: the first read of each file pins its version, and its size is
     * checked against the catalog's.
     */
    public static String writeCatalog(String spec) {
        boolean url = Datasets.isUrl(spec);
        String folder = url ? RemoteParquet.folderOf(spec) : null;
        List<ParquetCatalog.Entry> entries = new ArrayList<>();
        if (url) {
            try (ObjectStore store = ObjectStore.forUrl(spec, RemoteOptions.defaults())) {
                List<ParquetTable.Source> sources = RemoteParquet.listed(spec, store);
                List<org.apache.parquet.hadoop.metadata.ParquetMetadata> footers = ParquetTable.footers(sources);
                for (int f = 0; f < sources.size(); f++) {
                    RemoteInputFile in = (RemoteInputFile) sources.get(f).input();
                    String name = in.url().startsWith(folder) ? in.url().substring(folder.length()) : in.url();
                    entries.add(new ParquetCatalog.Entry(name, in.getLength(), in.etag(), footers.get(f)));
                }
                String where = folder + ParquetCatalog.FILE;
                store.write(where, new ParquetCatalog(entries).toBytes());
                return where;
            }
        }
        List<Path> files = ParquetFiles.expandOutsideTables(spec);
        Path dir = files.get(0).toAbsolutePath().getParent();
        for (Path f : files) {
            if (!dir.equals(f.toAbsolutePath().getParent())) {
                throw new IllegalArgumentException(spec + " names files in more than one folder (" + dir + " and "
                        + f.toAbsolutePath().getParent() + "): a catalog lists the files of its own folder");
            }
        }
        try (Arena mappings = Arena.ofShared()) { // the footers are read on several threads
            List<ParquetTable.Source> sources = new ArrayList<>(files.size());
            for (Path f : files) {
                sources.add(new ParquetTable.Source(f.toString(), new MappedInputFile(f, mappings), null));
            }
            List<org.apache.parquet.hadoop.metadata.ParquetMetadata> footers = ParquetTable.footers(sources);
            for (int f = 0; f < files.size(); f++) {
                entries.add(new ParquetCatalog.Entry(
                        files.get(f).getFileName().toString(),
                        ((MappedInputFile) sources.get(f).input()).getLength(),
                        null,
                        footers.get(f)));
            }
        }
        // Whole or not at all (a server never serves half a catalog), with the mode the umask gives
        // (a web server's own user reads it).
        Path where = dir.resolve(ParquetCatalog.FILE);
        try {
            SafeFiles.writeAtomically(where, null, new ParquetCatalog(entries).toBytes());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + where, e);
        }
        return where.toString();
    }
}
