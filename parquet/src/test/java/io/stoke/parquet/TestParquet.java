package io.stoke.parquet;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.LocalOutputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;

/** Parquet files as the Hub and img2dataset lay them out, written by parquet-java's example writer. */
final class TestParquet {
    private TestParquet() {}

    /** The {@code datasets} library's {@code Image} feature beside a {@code ClassLabel}. */
    static final MessageType HUB = MessageTypeParser.parseMessageType("""
            message hub {
              optional group image {
                optional binary bytes;
                optional binary path (STRING);
              }
              optional int64 label;
            }""");

    /** img2dataset's output: the image in a binary column named for its format, beside its key and caption. */
    static final MessageType IMG2DATASET = MessageTypeParser.parseMessageType("""
            message img2dataset {
              optional binary key (STRING);
              optional binary caption (STRING);
              optional binary jpg;
              optional int32 width;
            }""");

    /** A row: null image bytes write a null image. */
    record Row(byte[] image, String path, long label) {}

    static void writeHub(Path file, List<Row> rows, CompressionCodecName codec, int rowsPerGroup) {
        writeHub(file, rows, codec, rowsPerGroup, 16 * 1024);
    }

    /** With pages of {@code pageBytes} (a page holds whole values, so a large one may hold many images). */
    static void writeHub(Path file, List<Row> rows, CompressionCodecName codec, int rowsPerGroup, int pageBytes) {
        SimpleGroupFactory groups = new SimpleGroupFactory(HUB);
        try (ParquetWriter<Group> w = writer(file, HUB, codec, rowsPerGroup, pageBytes)) {
            for (Row r : rows) {
                Group g = groups.newGroup();
                Group image = g.addGroup("image");
                if (r.image() != null) {
                    image.add("bytes", Binary.fromConstantByteArray(r.image()));
                }
                image.add("path", r.path());
                g.add("label", r.label());
                w.write(g);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void writeImg2dataset(Path file, List<Row> rows, CompressionCodecName codec, int rowsPerGroup) {
        SimpleGroupFactory groups = new SimpleGroupFactory(IMG2DATASET);
        try (ParquetWriter<Group> w = writer(file, IMG2DATASET, codec, rowsPerGroup, 16 * 1024)) {
            for (Row r : rows) {
                Group g = groups.newGroup();
                g.add("key", r.path());
                g.add("caption", "a caption of " + r.path());
                if (r.image() != null) {
                    g.add("jpg", Binary.fromConstantByteArray(r.image()));
                }
                g.add("width", 7);
                w.write(g);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static ParquetWriter<Group> writer(
            Path file, MessageType schema, CompressionCodecName codec, int rowsPerGroup, int pageBytes)
            throws IOException {
        return ExampleParquetWriter.builder(new LocalOutputFile(file))
                .withConf(new PlainParquetConfiguration())
                .withType(schema)
                .withWriteMode(ParquetFileWriter.Mode.OVERWRITE)
                .withCompressionCodec(codec)
                .withRowGroupRowCountLimit(rowsPerGroup)
                .withPageSize(pageBytes)
                .build();
    }
}
