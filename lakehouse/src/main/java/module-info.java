/**
 * Delta Lake and Apache Iceberg tables read as their snapshot: the data files their log names at
 * one version, never the loose files of their folder, each file's row groups the shards, as
 * stoke-parquet reads Parquet. Delta Lake's log is replayed by Delta Kernel over Stoke's own file
 * access (local files, stoke-remote's stores), with no Hadoop file system; Iceberg's metadata and
 * manifests by Iceberg's own library over the same. A folder of Parquet files Stoke wrote is made a
 * table, or appended to one, by the same libraries ({@link io.stoke.lakehouse.OutputTable}).
 */
module io.stoke.lakehouse {
    requires transitive io.stoke.parquet;
    requires delta.kernel.api;
    requires delta.kernel.defaults;
    // Delta Kernel's jars are automatic modules, which name nothing they need: its default engine
    // parses the log with Jackson's databind and its Optional support, and its deletion vectors are
    // RoaringBitmap's, so they are resolved here.
    requires com.fasterxml.jackson.databind;
    requires com.fasterxml.jackson.datatype.jdk8;
    requires roaringbitmap;
    requires java.sql; // Kernel's messages format times as java.sql.Timestamp
    requires org.apache.iceberg; // Iceberg's own library (stoke-iceberg-java), over IcebergFileIO

    provides io.stoke.loader.source.TableDatasetProvider with
            io.stoke.lakehouse.LakehouseDatasets;

    exports io.stoke.lakehouse;
}
