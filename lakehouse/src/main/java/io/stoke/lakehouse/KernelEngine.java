package io.stoke.lakehouse;

import io.delta.kernel.data.ColumnarBatch;
import io.delta.kernel.data.FilteredColumnarBatch;
import io.delta.kernel.defaults.engine.DefaultEngine;
import io.delta.kernel.defaults.engine.fileio.FileIO;
import io.delta.kernel.defaults.engine.fileio.InputFile;
import io.delta.kernel.defaults.internal.parquet.ParquetFileReader.BatchReadSupport;
import io.delta.kernel.defaults.internal.parquet.ParquetFileReader.RowRecordCollector;
import io.delta.kernel.engine.FileReadResult;
import io.delta.kernel.engine.ParquetHandler;
import io.delta.kernel.exceptions.KernelEngineException;
import io.delta.kernel.expressions.Column;
import io.delta.kernel.expressions.Predicate;
import io.delta.kernel.types.MetadataColumnSpec;
import io.delta.kernel.types.StructType;
import io.delta.kernel.utils.CloseableIterator;
import io.delta.kernel.utils.DataFileStatus;
import io.delta.kernel.utils.FileStatus;
import io.stoke.parquet.PageDecompressors;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import org.apache.parquet.bytes.DirectByteBufferAllocator;
import org.apache.parquet.conf.ParquetConfiguration;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.api.InitContext;
import org.apache.parquet.hadoop.api.ReadSupport;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.api.RecordMaterializer;
import org.apache.parquet.schema.MessageType;

/**
 * Delta Kernel's default engine with one part replaced: the reader of the log's Parquet checkpoints.
 * Kernel's own builds a Hadoop {@code Configuration} for every file, which needs Hadoop's whole client
 * runtime (30 MB of shaded libraries) though nothing of Hadoop runs; this one reads the same files
 * with parquet-java's {@link PlainParquetConfiguration} and stoke-parquet's page codecs, as
 * stoke-parquet reads data files, and
 * materialises rows into Kernel's own column vectors ({@link RowRecordCollector}, Kernel's public
 * class), so the batches are the ones Kernel's reader gives. No Parquet is written: Stoke appends to a
 * table ({@link OutputTable}) files it wrote itself, and writes no checkpoint.
 */
final class KernelEngine extends DefaultEngine {
    /** Rows per batch, Kernel's default engine's own ({@code delta.kernel.default.parquet.reader.batch-size}). */
    private static final int BATCH_ROWS = 1024;

    private final FileIO fileIO;

    KernelEngine(FileIO fileIO) {
        super(fileIO);
        this.fileIO = fileIO;
    }

    @Override
    public ParquetHandler getParquetHandler() {
        return new ParquetHandler() {
            @Override
            public CloseableIterator<FileReadResult> readParquetFiles(
                    CloseableIterator<FileStatus> files, StructType schema, Optional<Predicate> predicate) {
                // The predicate is a hint that a reader may ignore: Kernel applies it to what is returned.
                return new FilesReader(files, schema);
            }

            @Override
            public CloseableIterator<DataFileStatus> writeParquetFiles(
                    String directory, CloseableIterator<FilteredColumnarBatch> data, List<Column> statsColumns) {
                throw new UnsupportedOperationException("Stoke reads tables and writes none: not writing " + directory);
            }

            @Override
            public void writeParquetFileAtomically(String path, CloseableIterator<FilteredColumnarBatch> data) {
                throw new UnsupportedOperationException("Stoke reads tables and writes none: not writing " + path);
            }
        };
    }

    /** The batches of each file in turn, each named by its file. */
    private final class FilesReader implements CloseableIterator<FileReadResult> {
        private final CloseableIterator<FileStatus> files;
        private final StructType schema;
        private FileBatches current;

        FilesReader(CloseableIterator<FileStatus> files, StructType schema) {
            this.files = files;
            this.schema = schema;
            if (schema.fields().stream()
                    .anyMatch(f -> f.isMetadataColumn() && f.getMetadataColumnSpec() != MetadataColumnSpec.ROW_INDEX)) {
                throw new IllegalArgumentException(
                        "a checkpoint read asks for metadata columns other than the row index");
            }
        }

        @Override
        public boolean hasNext() {
            while (current == null || !current.hasNext()) {
                if (current != null) {
                    current.close();
                    current = null;
                }
                if (!files.hasNext()) {
                    return false;
                }
                current = new FileBatches(files.next(), schema);
            }
            return true;
        }

        @Override
        public FileReadResult next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return new FileReadResult(current.next(), current.status.getPath());
        }

        @Override
        public void close() throws IOException {
            if (current != null) {
                current.close();
            }
            files.close();
        }
    }

    /** One Parquet file's rows, {@value #BATCH_ROWS} to a batch, as Kernel's own reader gives them. */
    private final class FileBatches implements CloseableIterator<ColumnarBatch> {
        final FileStatus status;
        private final StructType schema;
        private final boolean rowIndex;
        private final CollectingReadSupport support;
        private ParquetReader<Object> reader;
        private boolean pending; // a row has been read and not yet finalised into a batch

        FileBatches(FileStatus status, StructType schema) {
            this.status = status;
            this.schema = schema;
            this.rowIndex = schema.contains(MetadataColumnSpec.ROW_INDEX);
            this.support = new CollectingReadSupport(schema);
        }

        @Override
        public boolean hasNext() {
            try {
                if (reader == null) {
                    reader = open();
                }
                if (!pending) {
                    pending = reader.read() != null;
                }
                return pending;
            } catch (IOException e) {
                throw new KernelEngineException("Error reading Parquet file: " + status.getPath(), e);
            }
        }

        @Override
        public ColumnarBatch next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            int rows = 0;
            do {
                pending = false;
                support.rows.finalizeCurrentRow(rowIndex ? reader.getCurrentRowIndex() : -1);
                rows++;
            } while (rows < BATCH_ROWS && hasNext());
            return support.rows.getDataAsColumnarBatch(rows);
        }

        private ParquetReader<Object> open() throws IOException {
            InputFile in = fileIO.newInputFile(status.getPath(), status.getSize());
            org.apache.parquet.io.InputFile parquetFile = new org.apache.parquet.io.InputFile() {
                @Override
                public long getLength() throws IOException {
                    return in.length();
                }

                @Override
                public org.apache.parquet.io.SeekableInputStream newStream() throws IOException {
                    var stream = in.newStream();
                    return new DelegatingSeekableInputStream(stream) {
                        @Override
                        public long getPos() throws IOException {
                            return stream.getPos();
                        }

                        @Override
                        public void seek(long pos) throws IOException {
                            stream.seek(pos);
                        }
                    };
                }
            };
            return new ParquetReader.Builder<Object>(parquetFile, new PlainParquetConfiguration()) {
                @Override
                protected ReadSupport<Object> getReadSupport() {
                    return support;
                }
            }.withCodecFactory(new PageDecompressors(new DirectByteBufferAllocator()))
                    .useRecordFilter(false)
                    .useStatsFilter(false)
                    .useBloomFilter(false)
                    .useDictionaryFilter(false)
                    .useColumnIndexFilter(false)
                    .build();
        }

        @Override
        public void close() {
            if (reader != null) {
                try {
                    reader.close();
                } catch (IOException e) {
                    throw new KernelEngineException("Error closing Parquet file: " + status.getPath(), e);
                }
            }
        }
    }

    /**
     * Kernel's read support, its schema pruning ({@link BatchReadSupport#init}) and its row
     * collector, reached through parquet-java's configuration-neutral entry point.
     */
    private static final class CollectingReadSupport extends ReadSupport<Object> {
        private final StructType schema;
        private final BatchReadSupport pruning;
        RowRecordCollector rows;

        CollectingReadSupport(StructType schema) {
            this.schema = schema;
            this.pruning = new BatchReadSupport(BATCH_ROWS, schema);
        }

        @Override
        public ReadContext init(InitContext context) {
            return pruning.init(context);
        }

        @Override
        public RecordMaterializer<Object> prepareForRead(
                ParquetConfiguration configuration,
                Map<String, String> keyValueMetaData,
                MessageType fileSchema,
                ReadContext readContext) {
            rows = new RowRecordCollector(BATCH_ROWS, schema, fileSchema);
            return rows;
        }

        @Override
        @Deprecated // parquet-java's abstract Hadoop overload, which the reader above never calls
        public RecordMaterializer<Object> prepareForRead(
                org.apache.hadoop.conf.Configuration configuration,
                Map<String, String> keyValueMetaData,
                MessageType fileSchema,
                ReadContext readContext) {
            throw new IllegalStateException("read with a ParquetConfiguration, never with Hadoop's");
        }
    }
}
