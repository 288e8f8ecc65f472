package io.stoke.loader.source;

/**
 * Opens datasets held as rows of table files (Parquet: the Hugging Face Hub's layout, img2dataset's,
 * a Spark table's; Arrow IPC: a Hugging Face {@code datasets.Dataset}'s own files). The loader reads
 * no table format itself: stoke-parquet and stoke-arrow each register one of these
 * in {@code META-INF/services}, and {@link Datasets#openLocalOrUrl(String, UrlDatasetProvider.ShardCache,
 * TableColumns)} finds it when the dataset is one.
 */
public interface TableDatasetProvider {
    /**
     * Whether this provider opens {@code spec}, one that {@link Datasets} routed to a table: by default
     * (Parquet's) every table that is not Arrow, a URL folder with columns named among them;
     * stoke-arrow's opens a Hugging Face {@code datasets} Arrow dataset ({@link Datasets#isArrow}).
     */
    default boolean opens(String spec) {
        return !Datasets.isArrow(spec) && Datasets.lakehouseFormat(spec) == null;
    }

    /**
     * Where this provider is asked among those on the class path, lowest first: stoke-lakehouse's
     * (-1) before Parquet's (0), since a table's folder holds Parquet files.
     */
    default int order() {
        return 0;
    }

    /**
     * The dataset at {@code spec} (a file, a brace pattern or glob, or a folder of table files); the
     * caller closes it.
     *
     * @param columns which columns hold the image, the label and the key
     * @param shardCache how many bytes of loaded row groups to hold at once
     * @throws IllegalArgumentException naming the file and the column when a column is missing or
     *     of the wrong type, or naming the file when its metadata cannot be read
     */
    Dataset open(String spec, TableColumns columns, UrlDatasetProvider.ShardCache shardCache);
}
