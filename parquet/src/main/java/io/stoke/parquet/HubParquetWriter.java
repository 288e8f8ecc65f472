package io.stoke.parquet;

import io.stoke.loader.source.Dataset;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.LocalOutputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;

/**
 * Writes a folder or list dataset as Parquet in the Hugging Face Hub's layout: an image struct
 * ({@code image: struct<bytes: binary, path: string>}, the {@code datasets} library's {@code Image}
 * feature) and an int64 {@code label}, the files' bytes as they are, in dataset order, in files of
 * {@code rowsPerFile} rows named as the Hub names them ({@code train-00000-of-00004.parquet}), each
 * in row groups of {@code rowsPerGroup} rows, uncompressed (images are compressed already). What
 * {@code stoke make-dataset --format parquet} writes, to try Parquet with; parquet-java's writer, no
 * Hadoop.
 */
public final class HubParquetWriter {
    static final MessageType SCHEMA = MessageTypeParser.parseMessageType("""
            message hub {
              optional group image {
                optional binary bytes;
                optional binary path (STRING);
              }
              optional int64 label;
            }""");

    private HubParquetWriter() {}

    /** Writes {@code dataset}'s samples into {@code out}; returns the files written, in order. */
    public static List<Path> write(Dataset dataset, Path out, int rowsPerFile, int rowsPerGroup) {
        if (rowsPerFile < 1 || rowsPerGroup < 1) {
            throw new IllegalArgumentException("rows per file and per row group must be positive");
        }
        int n = dataset.size();
        int files = Math.max(1, (n + rowsPerFile - 1) / rowsPerFile);
        List<Path> written = new ArrayList<>(files);
        try {
            Files.createDirectories(out);
            for (int f = 0; f < files; f++) {
                Path file = out.resolve(String.format("train-%05d-of-%05d.parquet", f, files));
                try (ParquetWriter<Integer> w = RowWriteSupport.<Integer>writer(
                                new LocalOutputFile(file), SCHEMA, (o, i) -> writeSample(o, dataset, i))
                        .withWriteMode(ParquetFileWriter.Mode.OVERWRITE)
                        .withCompressionCodec(CompressionCodecName.UNCOMPRESSED)
                        .withDictionaryEncoding(false)
                        .withRowGroupRowCountLimit(rowsPerGroup)
                        .build()) {
                    for (int i = f * rowsPerFile; i < Math.min(n, (f + 1) * rowsPerFile); i++) {
                        w.write(i);
                    }
                }
                written.add(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + out + ": " + e.getMessage(), e);
        }
        return written;
    }

    /** Writes sample {@code i} as a row: the file's bytes, its path, its label. */
    private static void writeSample(RecordConsumer out, Dataset dataset, int sample) {
        String path = dataset.path(sample);
        byte[] bytes;
        try {
            Path file = Path.of(path);
            bytes = Files.readAllBytes(file.isAbsolute() ? file : dataset.root().resolve(file));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + dataset.name(sample) + ": " + e.getMessage(), e);
        }
        out.startField("image", 0);
        out.startGroup();
        out.startField("bytes", 0);
        out.addBinary(Binary.fromConstantByteArray(bytes));
        out.endField("bytes", 0);
        out.startField("path", 1);
        out.addBinary(Binary.fromString(path));
        out.endField("path", 1);
        out.endGroup();
        out.endField("image", 0);
        out.startField("label", 1);
        out.addLong(dataset.label(sample));
        out.endField("label", 1);
    }
}
