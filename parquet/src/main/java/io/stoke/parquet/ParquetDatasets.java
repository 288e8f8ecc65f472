package io.stoke.parquet;

import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.TableDatasetProvider;
import io.stoke.loader.source.UrlDatasetProvider;
import java.lang.foreign.Arena;

/**
 * Parquet datasets read in place: the Hugging Face Hub's layout (an image struct
 * {@code struct<bytes: binary, path: string>} and an int64 {@code label}), img2dataset's (a binary
 * {@code jpg} column beside {@code key} and {@code caption}), and Spark tables. Each row is a sample,
 * in file then row order; each row group is a shard, loaded into a bounded cache when one of its
 * rows is read ({@link RowGroupCache}). Opening reads only the files' footers.
 *
 * <p>Found by {@link Datasets#open(String, UrlDatasetProvider.ShardCache, TableColumns)} through
 * {@code META-INF/services}; {@link #openLocal} is the same for Java callers.
 */
public final class ParquetDatasets implements TableDatasetProvider {
    /** For the service loader. */
    public ParquetDatasets() {}

    @Override
    public Dataset open(String spec, TableColumns columns, UrlDatasetProvider.ShardCache cache) {
        if (Datasets.isUrl(spec)) {
            throw new IllegalArgumentException(spec + ": Parquet is read from local files only, so far;"
                    + " copy the files, or `stoke pack` them into tar shards and serve those");
        }
        return openLocal(spec, columns, cache.bytes());
    }

    /**
     * The local Parquet dataset at {@code spec} (a file, a brace pattern or glob, or a folder).
     *
     * @param cacheBytes how many bytes of loaded row groups to hold at once
     */
    public static ShardDataset openLocal(String spec, TableColumns columns, long cacheBytes) {
        Arena mappings = Arena.ofShared();
        ParquetTable table;
        try {
            table = ParquetTable.open(ParquetFiles.expand(spec), columns, cacheBytes, mappings);
        } catch (RuntimeException e) {
            mappings.close();
            throw e;
        }
        String[] names = new String[table.shards()];
        for (int s = 0; s < names.length; s++) {
            names[s] = table.shardName(s);
        }
        RowGroupCache rowGroups = new RowGroupCache(table, cacheBytes, mappings);
        return ShardDataset.of(
                table.root(), Shards.of(names, table.firstSamples(), rowGroups, table.labelled(), rowGroups));
    }
}
