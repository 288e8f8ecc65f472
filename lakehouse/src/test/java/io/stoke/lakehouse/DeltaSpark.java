package io.stoke.lakehouse;

import org.apache.spark.sql.SparkSession;

/** A local Spark with Delta Lake's own connector (delta-spark), as the tests and their tools write tables with. */
final class DeltaSpark {
    private DeltaSpark() {}

    /**
     * A local session of {@code threads} threads; deletion vectors off by default, so that a DELETE
     * rewrites files (copy-on-write) unless a table asks for them.
     */
    static SparkSession session(String name, int threads) {
        return SparkSession.builder()
                .master("local[" + threads + "]")
                .appName(name)
                .config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                .config("spark.databricks.delta.properties.defaults.enableDeletionVectors", "false")
                .getOrCreate();
    }
}
