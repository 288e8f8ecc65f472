package io.stoke.parquet;

import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.ShardTable;
import io.stoke.remote.ShardFetchException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.VersionParser;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReaderImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.column.page.PageReader;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.io.SeekableInputStream;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.PrimitiveConverter;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * Loads one row group into its block ({@link RowGroupMemory}) through parquet-java: the image, label
 * and key columns' chunks are read, their pages decompressed and decoded (plain or dictionary), and
 * each row's image is located where it lies in the block. A row that cannot be read (a null image,
 * a page that does not decompress, fewer values than the footer's rows) becomes a failed row of the
 * table, with its reason; the rows before it are kept.
 */
final class RowGroupLoad {
    private final ParquetTable.File file;
    private final int rowGroup;
    private final long firstRow;
    private final int rows;
    private final RowGroupMemory memory;
    private final String[] keys;
    private final int[] labels;
    private final long[] offsets;
    private final int[] lengths;
    private final SampleStatus[] status;
    private final String[] details;
    /** Values parquet-java handed back outside the block, copied into it. */
    int copied;

    RowGroupLoad(ParquetTable.File file, int rowGroup, long firstRow, MemorySegment block) {
        this.file = file;
        this.rowGroup = rowGroup;
        this.firstRow = firstRow;
        this.rows = (int) file.footer().getBlocks().get(rowGroup).getRowCount();
        this.memory = new RowGroupMemory(block);
        this.keys = new String[rows];
        this.labels = new int[rows];
        this.offsets = new long[rows];
        this.lengths = new int[rows];
        this.status = new SampleStatus[rows];
        this.details = new String[rows];
        Arrays.fill(labels, -1);
        Arrays.fill(status, SampleStatus.OK);
    }

    /** The row group's table; its offsets are into the block. */
    ShardTable load() {
        ImageColumns columns = file.columns();
        ParquetReadOptions options = ParquetReadOptions.builder(new PlainParquetConfiguration())
                .withAllocator(memory)
                .withCodecFactory(new PageDecompressors(memory))
                .usePageChecksumVerification(false)
                // The chunks in one buffer: a page then never spans two, which parquet-java would copy.
                .withMaxAllocationInBytes(Integer.MAX_VALUE - 64)
                .build();
        VersionParser.ParsedVersion writer = writerVersion();
        try (SeekableInputStream in = file.input().newStream();
                ParquetFileReader reader = ParquetFileReader.open(file.input(), file.footer(), options, in)) {
            reader.setRequestedSchema(columns.projection());
            PageReadStore store = reader.readRowGroup(rowGroup);
            if (store == null) {
                failFrom(0, "the row group is missing from the file");
            } else {
                readImages(store, columns.image(), writer, columns.imageName());
                if (columns.label() != null) {
                    readLabels(store, columns.label(), writer);
                }
                if (columns.key() != null) {
                    readKeys(store, columns.key(), writer);
                }
            }
        } catch (ShardFetchException e) {
            // The store failed after its retries, or the file changed: the run ends naming it, as for a
            // remote tar shard, never a short epoch.
            throw e;
        } catch (IOException | RuntimeException e) {
            if (e.getCause() instanceof ShardFetchException fetch) {
                throw fetch;
            }
            // The file's own damage, before any row was decoded: a chunk past the end of the file, say.
            failUnread("cannot read row group " + rowGroup + ": " + reason(e));
        } catch (StackOverflowError e) {
            // Thrift skips a page header's unknown fields with no depth limit: damaged bytes that read
            // as sets within sets recurse until the stack ends. Only this parse of local bytes is
            // unwound; left to propagate, it would end a Spark executor (a fatal error to Spark).
            failUnread("cannot read row group " + rowGroup + ": a page header nests deeper than the stack"
                    + " (damaged bytes)");
        }
        for (int i = 0; i < rows; i++) {
            if (keys[i] == null) {
                keys[i] = Long.toString(firstRow + i);
            }
        }
        int[] deleted = file.deletedIn(firstRow, rows);
        if (deleted.length > 0) {
            return withoutRows(deleted);
        }
        return ShardTable.of(List.of(keys), labels, offsets, lengths, status, details);
    }

    /**
     * The table of the rows that are not {@code deleted} (ascending), in row order: every row was
     * read (a page's values come in row order), and a deleted one is left out here, once per load.
     */
    private ShardTable withoutRows(int[] deleted) {
        int kept = rows - deleted.length;
        String[] k = new String[kept];
        int[] l = new int[kept];
        long[] o = new long[kept];
        int[] n = new int[kept];
        SampleStatus[] s = new SampleStatus[kept];
        String[] d = new String[kept];
        int at = 0;
        int next = 0; // the next deleted row
        for (int i = 0; i < rows; i++) {
            if (next < deleted.length && deleted[next] == i) {
                next++;
                continue;
            }
            k[at] = keys[i];
            l[at] = labels[i];
            o[at] = offsets[i];
            n[at] = lengths[i];
            s[at] = status[i];
            d[at] = details[i];
            at++;
        }
        return ShardTable.of(List.of(k), l, o, n, s, d);
    }

    private void readImages(PageReadStore store, ColumnDescriptor c, VersionParser.ParsedVersion writer, String name) {
        int i = 0;
        try {
            PageReader pages = store.getPageReader(c);
            long values = pages.getTotalValueCount();
            ColumnReader r = new ColumnReaderImpl(c, pages, new PrimitiveConverter() {}, writer);
            int n = (int) Math.min(values, rows);
            for (; i < n; i++) {
                if (r.getCurrentDefinitionLevel() == c.getMaxDefinitionLevel()) {
                    place(i, r.getBinary());
                } else {
                    fail(i, SampleStatus.NO_IMAGE, "its " + name + " is null");
                }
                r.consume();
            }
            if (values < rows) {
                failFrom(i, "the footer says " + rows + " rows, column " + name + " holds " + values + " values");
            }
        } catch (RuntimeException e) {
            failFrom(i, "column " + name + " cannot be decoded from here on: " + reason(e));
        }
    }

    private void place(int i, Binary value) {
        ByteBuffer bytes = value.toByteBuffer();
        long at = memory.offsetOf(bytes);
        if (at < 0) {
            ByteBuffer copy = memory.allocate(bytes.remaining());
            copy.put(bytes.duplicate()).flip();
            at = memory.offsetOf(copy);
            copied++;
        }
        offsets[i] = at;
        lengths[i] = bytes.remaining();
        if (lengths[i] == 0) {
            fail(i, SampleStatus.EMPTY_FILE, "its image has no bytes");
        }
    }

    private void readLabels(PageReadStore store, ColumnDescriptor c, VersionParser.ParsedVersion writer) {
        int i = 0;
        String name = String.join(".", c.getPath());
        try {
            PageReader pages = store.getPageReader(c);
            ColumnReader r = new ColumnReaderImpl(c, pages, new PrimitiveConverter() {}, writer);
            boolean int64 = c.getPrimitiveType().getPrimitiveTypeName() == PrimitiveTypeName.INT64;
            int n = (int) Math.min(pages.getTotalValueCount(), rows);
            for (; i < n; i++) {
                if (r.getCurrentDefinitionLevel() == c.getMaxDefinitionLevel()) {
                    long v = int64 ? r.getLong() : r.getInteger();
                    // -1 is the Hub's ClassLabel for "no label" (test splits): kept as Stoke's -1.
                    if (v < -1 || v > Integer.MAX_VALUE) {
                        fail(i, SampleStatus.BAD_LABEL, "its " + name + " is " + v);
                    } else {
                        labels[i] = (int) v;
                    }
                } else {
                    fail(i, SampleStatus.NO_LABEL, "its " + name + " is null");
                }
                r.consume();
            }
            for (; i < rows; i++) {
                fail(
                        i,
                        SampleStatus.NO_LABEL,
                        "column " + name + " holds fewer values than the footer's " + rows + " rows");
            }
        } catch (RuntimeException e) {
            for (; i < rows; i++) {
                fail(i, SampleStatus.NO_LABEL, "column " + name + " cannot be decoded: " + reason(e));
            }
        }
    }

    private void readKeys(PageReadStore store, ColumnDescriptor c, VersionParser.ParsedVersion writer) {
        try {
            PageReader pages = store.getPageReader(c);
            ColumnReader r = new ColumnReaderImpl(c, pages, new PrimitiveConverter() {}, writer);
            PrimitiveTypeName type = c.getPrimitiveType().getPrimitiveTypeName();
            int n = (int) Math.min(pages.getTotalValueCount(), rows);
            for (int i = 0; i < n; i++) {
                if (r.getCurrentDefinitionLevel() == c.getMaxDefinitionLevel()) {
                    keys[i] = switch (type) {
                        case INT64 -> Long.toString(r.getLong());
                        case INT32 -> Integer.toString(r.getInteger());
                        default -> r.getBinary().toStringUsingUTF8();
                    };
                }
                r.consume();
            }
        } catch (RuntimeException e) {
            // Keys only name samples: the rows without one are named by their row, as without a key column.
        }
    }

    private void fail(int i, SampleStatus why, String detail) {
        if (status[i] == SampleStatus.OK) {
            status[i] = why;
            details[i] = detail;
        }
    }

    private void failFrom(int from, String detail) {
        for (int i = from; i < rows; i++) {
            fail(i, SampleStatus.CORRUPT, detail);
        }
    }

    private void failUnread(String detail) {
        for (int i = 0; i < rows; i++) {
            if (lengths[i] == 0) {
                fail(i, SampleStatus.CORRUPT, detail);
            }
        }
    }

    private VersionParser.ParsedVersion writerVersion() {
        String createdBy = file.footer().getFileMetaData().getCreatedBy();
        try {
            return createdBy != null ? VersionParser.parse(createdBy) : null;
        } catch (VersionParser.VersionParseException | RuntimeException e) {
            return null;
        }
    }

    private static String reason(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null && b.length() < 300; t = t.getCause()) {
            if (!b.isEmpty()) {
                b.append(": ");
            }
            if (endOfThriftInput(t)) {
                // Thrift's stream transport says this of any input that ends, a file's bytes too: a
                // user of a local file, or of a store, would look for a network fault that is not there.
                b.append("its bytes end inside it (damaged or cut short)");
                break;
            }
            String message =
                    t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
            Throwable cause = t.getCause();
            if (cause != null && cause.getMessage() != null && message.endsWith(": " + cause.getMessage())) {
                // parquet-java's wrapping repeats its cause's message, which comes next
                message = message.substring(
                        0, message.length() - cause.getMessage().length() - 2);
            }
            b.append(message);
        }
        return b.toString();
    }

    /** Thrift's end of input (TTransportException's END_OF_FILE from its stream transport), shaded in parquet-java. */
    private static boolean endOfThriftInput(Throwable t) {
        return t.getClass().getName().endsWith(".thrift.transport.TTransportException")
                && "Socket is closed by peer.".equals(t.getMessage());
    }
}
