package io.stoke.lakehouse;

import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;

/**
 * Makes a folder of Parquet files a Delta Lake table in place, with Delta Lake's own
 * {@code CONVERT TO DELTA} (delta-spark on a local Spark): the log names the very files, so the table
 * and the files read directly are the same bytes, which docs/benchmarks/lakehouse.md's side-by-side
 * compares. Run as DeltaFixtures is, with the folder as its argument.
 */
public final class DeltaConvert {
    private DeltaConvert() {}

    public static void main(String[] args) {
        Path folder = Path.of(args[0]).toAbsolutePath();
        SparkSession spark = DeltaSpark.session("stoke-delta-convert", 1);
        try {
            spark.sql("CONVERT TO DELTA parquet.`" + folder + "`");
        } finally {
            spark.stop();
        }
    }
}
