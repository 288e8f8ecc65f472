package io.stoke.embed;

import io.stoke.parquet.RowWriteSupport;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.LocalOutputFile;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;

/**
 * One Parquet file of embeddings, written a row at a time in the order rows are given: the table
 * {@code stoke embed --format parquet} and {@code stoke spark-embed} both write, one file per
 * input file (a tar shard, a Parquet file), readable by Spark, pandas (pyarrow) and DuckDB:
 * <pre>
 *   shard      string      the input file's name ("" for a folder or list of images)
 *   key        string      the sample's key: a tar sample's name, a Parquet row's key column
 *                          (else its row), an image's file
 *   row        int64       the sample's position in its input file (a Parquet row, a tar
 *                          shard's sample order; in the list, for a folder or list of images)
 *   label      int32       its label (-1 when the data has none)
 *   status     string      "ok", or why it did not decode (its embedding is then zeros)
 *   embedding  array&lt;float&gt;  the model's output
 * </pre>
 * Written through the Parquet library Spark itself carries (parquet-hadoop), with the write support
 * every Stoke Parquet file shares ({@link RowWriteSupport}), to a local file with no Hadoop file system: uncompressed, because float vectors do not compress and compression would
 * need Hadoop's codecs on the class path. Single-threaded: one writer per task or run.
 */
public final class EmbeddingTable implements AutoCloseable {
    /** The status of a sample that decoded. */
    public static final String OK = "ok";

    /** The table's schema, every file's the same (what a lakehouse table of them is made with). */
    public static final MessageType SCHEMA = MessageTypeParser.parseMessageType("""
            message embedding {
              required binary shard (STRING);
              required binary key (STRING);
              required int64 row;
              required int32 label;
              required binary status (STRING);
              required group embedding (LIST) {
                repeated group list {
                  required float element;
                }
              }
            }""");

    private final Row row = new Row();
    private final ParquetWriter<Row> writer;
    private final long dimension;
    private long rows;

    private EmbeddingTable(OutputFile file, long dimension) throws IOException {
        this.dimension = dimension;
        this.writer = RowWriteSupport.writer(file, SCHEMA, this::writeRow)
                // O_CREAT|O_EXCL: a link planted at the name is never written through.
                .withWriteMode(ParquetFileWriter.Mode.CREATE)
                .withCompressionCodec(CompressionCodecName.UNCOMPRESSED)
                // A dictionary of float values would only grow the file; shards and statuses repeat.
                .withDictionaryEncoding("embedding.list.element", false)
                .build();
    }

    /** A table of {@code dimension}-value embeddings in {@code file}, which must not exist (not even as a link). */
    public static EmbeddingTable create(Path file, long dimension) {
        try {
            return new EmbeddingTable(new LocalOutputFile(file), dimension);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + file, e);
        }
    }

    /**
     * Appends a sample whose embedding is {@code dimension} float32 values (native order) at
     * {@code values[offset, offset + 4 * dimension)}.
     */
    public void append(String shard, String key, long position, int label, MemorySegment values, long offset) {
        if (offset < 0 || offset + 4 * dimension > values.byteSize()) {
            throw new IndexOutOfBoundsException(
                    "embedding at " + offset + " of " + values.byteSize() + " bytes, " + dimension + " values");
        }
        write(shard, key, position, label, OK, values, offset);
    }

    /** Appends a sample that did not decode: its status says why, its embedding is zeros. */
    public void appendFailed(String shard, String key, long position, int label, String reason) {
        if (reason.equals(OK)) {
            throw new IllegalArgumentException("a failed sample's status cannot be \"ok\"");
        }
        write(shard, key, position, label, reason, null, 0);
    }

    private void write(
            String shard, String key, long position, int label, String status, MemorySegment values, long offset) {
        row.shard = shard;
        row.key = key;
        row.position = position;
        row.label = label;
        row.status = status;
        row.values = values;
        row.offset = offset;
        try {
            writer.write(row);
        } catch (IOException e) {
            throw new UncheckedIOException("writing an embedding table", e);
        }
        rows++;
    }

    /** Rows appended so far. */
    public long rows() {
        return rows;
    }

    public long dimension() {
        return dimension;
    }

    /** Writes the footer: the file is complete (and readable) only after this. */
    @Override
    public void close() {
        try {
            writer.close();
        } catch (IOException e) {
            throw new UncheckedIOException("closing an embedding table", e);
        }
    }

    /** The row being written: one, reused, so appending allocates no row objects. */
    private final class Row {
        String shard;
        String key;
        long position; // the row column
        int label;
        String status;
        MemorySegment values; // null: zeros
        long offset;
    }

    /** One row's fields, in the schema's order. */
    private void writeRow(RecordConsumer out, Row r) {
        string(out, 0, "shard", r.shard);
        string(out, 1, "key", r.key);
        out.startField("row", 2);
        out.addLong(r.position);
        out.endField("row", 2);
        out.startField("label", 3);
        out.addInteger(r.label);
        out.endField("label", 3);
        string(out, 4, "status", r.status);
        out.startField("embedding", 5);
        out.startGroup();
        out.startField("list", 0);
        for (long j = 0; j < dimension; j++) {
            out.startGroup();
            out.startField("element", 0);
            out.addFloat(r.values == null ? 0f : r.values.get(ValueLayout.JAVA_FLOAT, r.offset + 4 * j));
            out.endField("element", 0);
            out.endGroup();
        }
        out.endField("list", 0);
        out.endGroup();
        out.endField("embedding", 5);
    }

    private static void string(RecordConsumer out, int field, String name, String value) {
        out.startField(name, field);
        out.addBinary(Binary.fromString(value));
        out.endField(name, field);
    }
}
