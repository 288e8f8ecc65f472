/**
 * Parquet files read in place as datasets (a row group is a shard), locally or on object stores, and
 * written in the Hugging Face Hub's layout. Its Parquet is parquet-java as one named module
 * ({@code org.apache.parquet}, stoke-parquet-java), which its writer's builder extends.
 */
module io.stoke.parquet {
    requires transitive io.stoke.loader;
    requires transitive org.apache.parquet; // RowWriteSupport is a WriteSupport, its Builder a ParquetWriter.Builder
    requires transitive io.stoke.remote; // s3:// and http(s):// files by ranged GETs; openFiles takes its ObjectStore
    requires com.fasterxml.jackson.core; // parquet-index.json
    requires snappy.java; // the page codecs pyarrow, Spark and DuckDB write
    requires com.github.luben.zstd_jni;

    provides io.stoke.loader.source.TableDatasetProvider with
            io.stoke.parquet.ParquetDatasets;

    exports io.stoke.parquet;
}
