package io.stoke.cli;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.io.ColumnIOFactory;
import org.apache.parquet.io.LocalInputFile;
import org.apache.parquet.io.RecordReader;
import org.apache.parquet.schema.MessageType;

/**
 * An embeddings table's rows read back with the Parquet library's own record reader (no Hadoop):
 * for the tests that have no Spark in their JVM. SparkEmbedTest reads the same tables with Spark.
 */
record ParquetRows(String shard, String key, long row, int label, String status, float[] embedding) {
    static List<ParquetRows> read(Path file) throws IOException {
        List<ParquetRows> rows = new ArrayList<>();
        try (ParquetFileReader reader = ParquetFileReader.open(
                new LocalInputFile(file),
                ParquetReadOptions.builder(new PlainParquetConfiguration()).build())) {
            MessageType schema = reader.getFooter().getFileMetaData().getSchema();
            for (PageReadStore pages; (pages = reader.readNextRowGroup()) != null; ) {
                RecordReader<Group> records = new ColumnIOFactory()
                        .getColumnIO(schema)
                        .getRecordReader(pages, new GroupRecordConverter(schema));
                for (long r = 0; r < pages.getRowCount(); r++) {
                    Group g = records.read();
                    Group list = g.getGroup("embedding", 0);
                    int n = list.getFieldRepetitionCount("list");
                    float[] values = new float[n];
                    for (int i = 0; i < n; i++) {
                        values[i] = list.getGroup("list", i).getFloat("element", 0);
                    }
                    rows.add(new ParquetRows(
                            g.getString("shard", 0),
                            g.getString("key", 0),
                            g.getLong("row", 0),
                            g.getInteger("label", 0),
                            g.getString("status", 0),
                            values));
                }
            }
        }
        return rows;
    }
}
