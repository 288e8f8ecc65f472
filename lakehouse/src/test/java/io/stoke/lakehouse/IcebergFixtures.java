package io.stoke.lakehouse;

import io.stoke.loader.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;

/**
 * Writes the small Apache Iceberg table the Python client's and the CLI's tests read
 * ({@code clients/python/tests/data/iceberg-images}), its metadata by Iceberg's own Java library
 * (a Hadoop table: {@code metadata/v<N>.metadata.json} and {@code version-hint.text}) over Parquet
 * data files Spark writes, as IcebergTableTest writes its own. Snapshot 1 appends 24 rows (labels 0
 * to 3, six each) in two parts; snapshot 2 deletes label 3 copy-on-write (both parts rewritten, the
 * old ones left in the folder); snapshot 3 appends 6 rows of label 4. The table is written at
 * {@code /tmp/stoke-fixture/iceberg-images}, the location its metadata names, and copied to the
 * folder given, so every reader reads it where it was not written. Run once by hand, as
 * DeltaFixtures is ({@code io.stoke.lakehouse.IcebergFixtures ../clients/python/tests/data/iceberg-images}).
 */
public final class IcebergFixtures {
    /** Where the fixture is written, and its metadata says it lies. */
    static final Path WRITTEN_AT = Path.of("/tmp/stoke-fixture/iceberg-images");

    private IcebergFixtures() {}

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]).toAbsolutePath();
        SparkSession spark = DeltaSpark.session("stoke-iceberg-fixture", 1);
        try {
            Files.createDirectories(WRITTEN_AT.resolve("data"));
            Table t = new HadoopTables(new Configuration())
                    .create(
                            IcebergTableTest.SCHEMA,
                            PartitionSpec.unpartitioned(),
                            IcebergTableTest.properties(),
                            WRITTEN_AT.toString());
            DataFile a = part(spark, t, "part-0", rows(0, 12, 4, false));
            DataFile b = part(spark, t, "part-1", rows(12, 12, 4, false));
            t.newAppend().appendFile(a).appendFile(b).commit();
            t.newOverwrite()
                    .deleteFile(a)
                    .deleteFile(b)
                    .addFile(part(spark, t, "part-0-deleted", rows(0, 12, 4, true)))
                    .addFile(part(spark, t, "part-1-deleted", rows(12, 12, 4, true)))
                    .commit();
            t.newAppend()
                    .appendFile(part(spark, t, "part-2", rows(24, 6, 0, false)))
                    .commit();
        } finally {
            spark.stop();
        }
        try (Stream<Path> files = Files.walk(WRITTEN_AT)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                String name = f.getFileName().toString();
                if (name.endsWith(".crc")) {
                    continue; // Hadoop's local checksums, no part of the table
                }
                Path to = out.resolve(WRITTEN_AT.relativize(f).toString());
                Files.createDirectories(to.getParent());
                Files.copy(f, to, StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    private static DataFile part(SparkSession spark, Table t, String name, List<Row> rows) throws Exception {
        Path dir = WRITTEN_AT.resolveSibling("spark").resolve(name);
        spark.createDataFrame(rows, DeltaTableTest.SCHEMA).coalesce(1).write().parquet(dir.toString());
        Path file;
        try (Stream<Path> files = Files.list(dir)) {
            file = files.filter(p -> p.toString().endsWith(".parquet"))
                    .findFirst()
                    .orElseThrow();
        }
        Path at = WRITTEN_AT.resolve("data").resolve(name + ".parquet");
        Files.move(file, at);
        return DataFiles.builder(t.spec())
                .withPath(at.toUri().toString())
                .withFileSizeInBytes(Files.size(at))
                .withRecordCount(rows.size())
                .withFormat(FileFormat.PARQUET)
                .build();
    }

    /** {@code n} rows from {@code first}, as DeltaFixtures writes them, less label 3's where {@code deleted}. */
    private static List<Row> rows(int first, int n, int classes, boolean deleted) {
        List<Row> out = new ArrayList<>(n);
        for (int i = first; i < first + n; i++) {
            long label = classes == 0 ? 4 : i % classes;
            if (!(deleted && label == 3)) {
                out.add(RowFactory.create(RowFactory.create(TestImages.jpeg(24, 16, i), "img-" + i + ".jpg"), label));
            }
        }
        return out;
    }
}
