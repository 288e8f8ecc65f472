package io.stoke.parquet;

import io.stoke.loader.internal.InParallel;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.source.TableColumns;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/**
 * A Parquet dataset's files as their footers describe them, and nothing more: opening reads each
 * file's footer (its schema, and each row group's row count and column chunk offsets), never a
 * page. Shard {@code s} of the dataset is row group {@link #rowGroup(int)} of file
 * {@link #file(int)}; its rows, less those its table's snapshot deleted, are samples
 * {@code [firstSample(s), firstSample(s + 1))}.
 */
final class ParquetTable {
    /** Slack over what the footer gives a row group's chunks and pages: alignment and page headers. */
    private static final long BLOCK_SLACK = 1L << 20;

    /** No row deleted: a file's rows are all samples. */
    static final long[] NONE_DELETED = {};

    /**
     * A file of the dataset: its name (a path or URL), how to read it, its footer when already read
     * (a catalog's), and the rows its table's snapshot deleted, ascending ({@link ParquetDatasets.TableFile}).
     */
    record Source(String name, InputFile input, ParquetMetadata footer, long[] deletedRows) {
        Source(String name, InputFile input, ParquetMetadata footer) {
            this(name, input, footer, NONE_DELETED);
        }
    }

    /** A file as opened: its footer, its columns, and its deleted rows, ascending. */
    record File(String name, InputFile input, ParquetMetadata footer, ImageColumns columns, long[] deletedRows) {
        /** The deleted rows of the rows {@code [first, first + rows)}, as indices from {@code first}, ascending. */
        int[] deletedIn(long first, int rows) {
            int from = lowerBound(deletedRows, first);
            int to = lowerBound(deletedRows, first + rows);
            int[] in = new int[to - from];
            for (int i = from; i < to; i++) {
                in[i - from] = (int) (deletedRows[i] - first);
            }
            return in;
        }

        /** How many of the rows {@code [first, first + rows)} are deleted: {@link #deletedIn}'s length, with no array. */
        int deletedCount(long first, int rows) {
            return lowerBound(deletedRows, first + rows) - lowerBound(deletedRows, first);
        }

        private static int lowerBound(long[] sorted, long value) {
            int at = java.util.Arrays.binarySearch(sorted, value);
            return at >= 0 ? at : -at - 1;
        }
    }

    private final List<File> files;
    private final int[] fileOf; // by shard
    private final int[] rowGroupOf;
    private final long[] firstRowInFile;
    private final long[] blockBytes;
    private final int[] firstSample;
    private final boolean labelled;

    private ParquetTable(
            List<File> files,
            List<int[]> shards,
            List<Long> firstRows,
            List<Long> blocks,
            List<Integer> samples,
            boolean labelled) {
        this.files = files;
        int n = shards.size();
        this.fileOf = new int[n];
        this.rowGroupOf = new int[n];
        this.firstRowInFile = new long[n];
        this.blockBytes = new long[n];
        this.firstSample = new int[n + 1];
        for (int s = 0; s < n; s++) {
            fileOf[s] = shards.get(s)[0];
            rowGroupOf[s] = shards.get(s)[1];
            firstRowInFile[s] = firstRows.get(s);
            blockBytes[s] = blocks.get(s);
            firstSample[s + 1] = Math.toIntExact(firstSample[s] + (long) samples.get(s));
        }
        this.labelled = labelled;
    }

    /**
     * Reads the footers of {@code paths}.
     *
     * @param maxBlock the most bytes one row group may take loaded (the shard cache's budget)
     * @throws IllegalArgumentException naming the file when its footer cannot be read, its columns
     *     are missing or of the wrong type, its pages use a codec not read, or a row group would
     *     not fit the shard cache
     */
    static ParquetTable open(List<Source> sources, TableColumns wanted, long maxBlock) {
        List<ParquetMetadata> footers = footers(sources);
        List<File> files = new ArrayList<>(sources.size());
        List<int[]> shards = new ArrayList<>();
        List<Long> firstRows = new ArrayList<>();
        List<Long> blocks = new ArrayList<>();
        List<Integer> samples = new ArrayList<>();
        Boolean labelled = null;
        for (int at = 0; at < sources.size(); at++) {
            String name = sources.get(at).name();
            InputFile input = sources.get(at).input();
            ParquetMetadata footer = footers.get(at);
            ImageColumns columns = ImageColumns.resolve(footer.getFileMetaData().getSchema(), wanted, name);
            if (labelled == null) {
                labelled = columns.label() != null;
            } else if (labelled != (columns.label() != null)) {
                throw new IllegalArgumentException(name
                        + (labelled
                                ? " has no label column, and the files before it do"
                                : " has a label column, and the files before it do not"));
            }
            int f = files.size();
            File file = new File(name, input, footer, columns, sources.get(at).deletedRows());
            files.add(file);
            List<BlockMetaData> groups = footer.getBlocks();
            long row = 0;
            for (int g = 0; g < groups.size(); g++) {
                BlockMetaData block = groups.get(g);
                if (block.getRowCount() < 0 || block.getRowCount() > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException(
                            name + ": row group " + g + " claims " + block.getRowCount() + " rows");
                }
                long need = BLOCK_SLACK;
                for (ColumnDescriptor c : columns.projection()) {
                    ColumnChunkMetaData chunk = chunk(block, c, name, g);
                    if (!PageDecompressors.READ.contains(chunk.getCodec())) {
                        throw new IllegalArgumentException(name + ": column "
                                + chunk.getPath().toDotString() + " of row group "
                                + g + " is compressed with " + chunk.getCodec() + ", which Stoke does not read ("
                                + PageDecompressors.READ + " are)");
                    }
                    if (chunk.getTotalSize() < 0 || chunk.getTotalUncompressedSize() < 0) {
                        throw new IllegalArgumentException(name + ": row group " + g + " gives a negative size");
                    }
                    // The chunk as read, and its pages decompressed beside it (an uncompressed page is used where it
                    // was read).
                    need += chunk.getTotalSize()
                            + (chunk.getCodec() == CompressionCodecName.UNCOMPRESSED
                                    ? 0
                                    : chunk.getTotalUncompressedSize());
                }
                need += need / 32;
                if (need > maxBlock) {
                    throw new IllegalArgumentException(name + ": row group " + g + " needs " + need
                            + " bytes loaded, more than the shard cache's " + maxBlock + " (--shard-cache-size)");
                }
                shards.add(new int[] {f, g});
                firstRows.add(row);
                blocks.add(need);
                int rows = (int) block.getRowCount();
                samples.add(rows - file.deletedCount(row, rows));
                row += rows;
            }
            long[] deleted = file.deletedRows();
            if (deleted.length > 0 && deleted[deleted.length - 1] >= row) {
                throw new IllegalArgumentException(name + ": the table's log deletes row " + deleted[deleted.length - 1]
                        + " of it, and the file holds " + row
                        + " rows: the table's deletion vector is not this file's");
            }
        }
        return new ParquetTable(files, shards, firstRows, blocks, samples, labelled != null && labelled);
    }

    /**
     * Each source's footer: the one it carries, else read from the file, many files at once (a
     * remote file's footer is a ranged GET of its tail, so opening 64 files takes about as long as 4).
     */
    static List<ParquetMetadata> footers(List<Source> sources) {
        return InParallel.map(sources.size(), FOOTER_READERS, "stoke-parquet-footer", f -> {
            Source s = sources.get(f);
            return s.footer() != null ? s.footer() : footer(s.input(), s.name());
        });
    }

    /** Footers read at once when opening many files. */
    private static final int FOOTER_READERS = 16;

    static ParquetMetadata footer(InputFile input, String name) {
        ParquetReadOptions options = ParquetReadOptions.builder(new PlainParquetConfiguration())
                .withMetadataFilter(ParquetMetadataConverter.NO_FILTER)
                .build();
        long footer;
        try (SeekableInputStream in = input.newStream()) {
            footer = footerLength(input, in);
            if (footer <= ReadLimits.PARQUET_FOOTER) {
                return ParquetFileReader.readFooter(input, options, in);
            }
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException(name + " is not a readable Parquet file: " + e.getMessage(), e);
        }
        throw new IllegalArgumentException(
                name + ": " + ReadLimits.exceeds("a footer", footer, ReadLimits.PARQUET_FOOTER));
    }

    /**
     * The footer's length as the file declares it (the 4 bytes before the closing magic), checked
     * against {@link ReadLimits#PARQUET_FOOTER} before parquet-java reads it: parquet-java allocates
     * a footer's buffer at whatever length the file declares, up to the file's size, and a sparse
     * file is large for free. 0 for a file too short to hold it, which parquet-java names.
     */
    private static long footerLength(InputFile input, SeekableInputStream in) throws IOException {
        long size = input.getLength();
        if (size < 12) {
            return 0;
        }
        byte[] tail = new byte[4];
        in.seek(size - 8);
        in.readFully(tail);
        return Integer.toUnsignedLong(
                ByteBuffer.wrap(tail).order(ByteOrder.LITTLE_ENDIAN).getInt());
    }

    static ColumnChunkMetaData chunk(BlockMetaData block, ColumnDescriptor c, String name, int g) {
        for (ColumnChunkMetaData chunk : block.getColumns()) {
            if (java.util.Arrays.equals(chunk.getPath().toArray(), c.getPath())) {
                return chunk;
            }
        }
        throw new IllegalArgumentException(
                name + ": row group " + g + " has no chunk of column " + String.join(".", c.getPath()));
    }

    int shards() {
        return fileOf.length;
    }

    File file(int shard) {
        return files.get(fileOf[shard]);
    }

    int rowGroup(int shard) {
        return rowGroupOf[shard];
    }

    long firstRowInFile(int shard) {
        return firstRowInFile[shard];
    }

    /** The rows of shard {@code s}'s row group, deleted ones too. */
    int rows(int shard) {
        return (int) file(shard).footer().getBlocks().get(rowGroupOf[shard]).getRowCount();
    }

    /** The row in its file of sample {@code index} of shard {@code s}: past the rows deleted before it. */
    long rowOf(int shard, int index) {
        long row = firstRowInFile[shard] + index;
        for (int d : file(shard).deletedIn(firstRowInFile[shard], rows(shard))) {
            if (firstRowInFile[shard] + d <= row) {
                row++;
            }
        }
        return row;
    }

    long blockBytes(int shard) {
        return blockBytes[shard];
    }

    int[] firstSamples() {
        return firstSample.clone();
    }

    boolean labelled() {
        return labelled;
    }

    /** Shard {@code s} as an error names it: its file and row group. */
    String shardName(int shard) {
        return file(shard).name() + " row group " + rowGroupOf[shard];
    }
}
