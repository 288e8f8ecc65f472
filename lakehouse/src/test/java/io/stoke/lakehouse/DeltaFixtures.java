package io.stoke.lakehouse;

import io.stoke.loader.testing.TestImages;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;

/**
 * Writes the small Delta Lake table the Python client's tests read
 * ({@code clients/python/tests/data/delta-images}), with Delta Lake itself (delta-spark on a local
 * Spark), as DeltaTableTest writes its own: version 0 appends 24 rows (labels 0 to 3, six each) in
 * two parts; version 1 DELETEs label 3 (copy-on-write: the parts rewritten, the old ones left in the
 * folder); version 2 appends 6 rows of label 4, and a checkpoint of it is written (Parquet). And
 * beside it {@code delta-deletion-vectors}: the same 24 rows with deletion vectors on (version 0), and a
 * DELETE of label 3 that marks the rows in a vector per part, the parts kept (version 1). Run
 * once by hand, from lakehouse/ ({@code -} for a table not to write):
 *
 * <pre>
 * mvn -q dependency:build-classpath -Dmdep.outputFile=/tmp/cp.txt -Dmdep.includeScope=test
 * java $(cat ../spark/jvm.options | grep -v '^#') -cp target/test-classes:target/classes:$(cat /tmp/cp.txt) \
 *     io.stoke.lakehouse.DeltaFixtures ../clients/python/tests/data/delta-images \
 *     ../clients/python/tests/data/delta-deletion-vectors
 * </pre>
 */
public final class DeltaFixtures {
    private DeltaFixtures() {}

    public static void main(String[] args) {
        SparkSession spark = DeltaSpark.session("stoke-delta-fixture", 1);
        try {
            if (!args[0].equals("-")) {
                images(spark, Path.of(args[0]).toAbsolutePath());
            }
            if (args.length > 1 && !args[1].equals("-")) {
                deletionVectors(spark, Path.of(args[1]).toAbsolutePath());
            }
        } finally {
            spark.stop();
        }
    }

    private static void deletionVectors(SparkSession spark, Path out) {
        spark.createDataFrame(rows(0, 24, 4), DeltaTableTest.SCHEMA)
                .repartition(2)
                .write()
                .format("delta")
                .option("delta.enableDeletionVectors", "true")
                .save(out.toString());
        spark.sql("DELETE FROM delta.`" + out + "` WHERE label = 3");
    }

    private static void images(SparkSession spark, Path out) {
        spark.createDataFrame(rows(0, 24, 4), DeltaTableTest.SCHEMA)
                .repartition(2)
                .write()
                .format("delta")
                .option("delta.checkpointInterval", "2") // version 2 is read from a Parquet checkpoint
                .save(out.toString());
        spark.sql("DELETE FROM delta.`" + out + "` WHERE label = 3");
        spark.createDataFrame(rows(24, 6, 0), DeltaTableTest.SCHEMA)
                .coalesce(1)
                .write()
                .format("delta")
                .mode("append")
                .save(out.toString());
    }

    /** {@code n} rows from {@code first}: a 24 x 16 JPEG each, labelled {@code i % classes} (0: label 4). */
    private static List<Row> rows(int first, int n, int classes) {
        List<Row> out = new ArrayList<>(n);
        for (int i = first; i < first + n; i++) {
            long label = classes == 0 ? 4 : i % classes;
            out.add(RowFactory.create(RowFactory.create(TestImages.jpeg(24, 16, i), "img-" + i + ".jpg"), label));
        }
        return out;
    }
}
