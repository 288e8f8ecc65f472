package io.stoke.parquet;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.conf.ParquetConfiguration;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.MessageType;

/**
 * parquet-java's {@link WriteSupport} for rows of one fixed schema, each row written by a
 * {@link Rows} function between the message's start and end: what every Parquet file Stoke writes
 * (the Hub layout of {@link HubParquetWriter}, {@code stoke-embed}'s embedding table) shares, so
 * that each writer says only its schema and how one row goes out. {@link #writer} gives
 * parquet-java's builder over it with a plain configuration, so no Hadoop file system or
 * configuration is ever created.
 *
 * @param <T> what one row is made from
 */
public final class RowWriteSupport<T> extends WriteSupport<T> {
    /** Writes one row's fields to {@code out}; the message around them is the support's. */
    @FunctionalInterface
    public interface Rows<T> {
        void write(RecordConsumer out, T row);
    }

    private final MessageType schema;
    private final Rows<T> rows;
    private RecordConsumer out;

    private RowWriteSupport(MessageType schema, Rows<T> rows) {
        this.schema = schema;
        this.rows = rows;
    }

    /**
     * parquet-java's writer builder for {@code schema}'s rows, each written by {@code rows}, into
     * {@code file}; the caller adds its write mode, codec and encodings, then builds.
     */
    public static <T> Builder<T> writer(OutputFile file, MessageType schema, Rows<T> rows) {
        return new Builder<>(file, schema, rows).withConf(new PlainParquetConfiguration());
    }

    @Override
    public WriteContext init(ParquetConfiguration configuration) {
        return new WriteContext(schema, Map.of());
    }

    @Override
    @SuppressWarnings("deprecation") // the Hadoop form WriteSupport still declares abstract
    public WriteContext init(Configuration configuration) {
        return new WriteContext(schema, Map.of());
    }

    @Override
    public void prepareForWrite(RecordConsumer recordConsumer) {
        this.out = recordConsumer;
    }

    @Override
    public void write(T row) {
        out.startMessage();
        rows.write(out, row);
        out.endMessage();
    }

    /** parquet-java's builder, making one {@link RowWriteSupport} when built. */
    public static final class Builder<T> extends ParquetWriter.Builder<T, Builder<T>> {
        private final MessageType schema;
        private final Rows<T> rows;

        private Builder(OutputFile file, MessageType schema, Rows<T> rows) {
            super(file);
            this.schema = schema;
            this.rows = rows;
        }

        @Override
        protected Builder<T> self() {
            return this;
        }

        @Override
        protected WriteSupport<T> getWriteSupport(ParquetConfiguration conf) {
            return new RowWriteSupport<>(schema, rows);
        }

        @Override
        @SuppressWarnings("deprecation") // the Hadoop form the builder still declares abstract
        protected WriteSupport<T> getWriteSupport(Configuration conf) {
            return new RowWriteSupport<>(schema, rows);
        }
    }
}
