package io.stoke.lakehouse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.spark.sql.SparkSession;

/**
 * Makes a folder of Parquet files in the Hub's layout ({@code image struct<bytes, path>},
 * {@code label bigint}) an Apache Iceberg table in place, as Iceberg's {@code add_files} migrates
 * files: a Hadoop table at the folder, created by Iceberg's Java library with a name mapping, one
 * snapshot appending the very files (their row counts Spark's). The table and the files read
 * directly are then the same bytes, which docs/benchmarks/lakehouse.md's side-by-side compares. Run
 * as DeltaFixtures is, with the folder as its argument.
 */
public final class IcebergConvert {
    private IcebergConvert() {}

    public static void main(String[] args) throws Exception {
        Path folder = Path.of(args[0]).toAbsolutePath();
        List<Path> files;
        try (Stream<Path> s = Files.list(folder)) {
            files = s.filter(p -> p.toString().endsWith(".parquet")).sorted().toList();
        }
        SparkSession spark = DeltaSpark.session("stoke-iceberg-convert", 1);
        try {
            Table t = new HadoopTables(new Configuration())
                    .create(
                            IcebergTableTest.SCHEMA,
                            PartitionSpec.unpartitioned(),
                            IcebergTableTest.properties(),
                            folder.toString());
            AppendFiles append = t.newAppend();
            for (Path f : files) {
                append.appendFile(DataFiles.builder(t.spec())
                        .withPath(f.toUri().toString())
                        .withFileSizeInBytes(Files.size(f))
                        .withRecordCount(spark.read().parquet(f.toString()).count())
                        .withFormat(FileFormat.PARQUET)
                        .build());
            }
            append.commit();
        } finally {
            spark.stop();
        }
    }
}
