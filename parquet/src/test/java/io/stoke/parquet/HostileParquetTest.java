package io.stoke.parquet;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.parquet.format.ColumnChunk;
import org.apache.parquet.format.FileMetaData;
import org.apache.parquet.format.Util;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Parquet files damaged where a reader trusts them, each read to the end under {@code skip}: every
 * row is a sample or an error naming the file, the row and the reason; nothing crashes or hangs.
 * The footers are rewritten with parquet-format's own Thrift classes.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HostileParquetTest {
    static final TransformSpec SMALL = TransformSpec.defaults().withResize(32, 32);
    static final int ROWS = 24;
    static final int PER_GROUP = 8;

    @TempDir
    static Path tmp;

    static List<TestParquet.Row> rows;

    @BeforeAll
    static void makeRows() {
        rows = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            rows.add(new TestParquet.Row(TestImages.jpeg(40 + i, 36, i), "img" + i + ".jpg", i % 3));
        }
    }

    private static Path written(String name, CompressionCodecName codec) {
        Path file = tmp.resolve(name);
        TestParquet.writeHub(file, rows, codec, PER_GROUP);
        return file;
    }

    /** The file with its footer's Thrift structure changed by {@code change}. */
    private static void rewriteFooter(Path file, Consumer<FileMetaData> change) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        int length = ByteBuffer.wrap(bytes, bytes.length - 8, 4)
                .order(ByteOrder.LITTLE_ENDIAN)
                .getInt();
        int start = bytes.length - 8 - length;
        FileMetaData md = Util.readFileMetaData(new ByteArrayInputStream(bytes, start, length));
        change.accept(md);
        ByteArrayOutputStream footer = new ByteArrayOutputStream();
        Util.writeFileMetaData(md, footer);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(bytes, 0, start);
        footer.writeTo(out);
        out.write(ByteBuffer.allocate(4)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(footer.size())
                .array());
        out.write("PAR1".getBytes());
        Files.write(file, out.toByteArray());
    }

    private static ColumnChunk imageChunk(FileMetaData md, int rowGroup) {
        for (ColumnChunk c : md.getRow_groups().get(rowGroup).getColumns()) {
            if (c.getMeta_data().getPath_in_schema().equals(List.of("image", "bytes"))) {
                return c;
            }
        }
        throw new AssertionError("no image.bytes chunk");
    }

    /** Every error of one epoch under skip, and how many samples decoded. */
    private static List<SampleError> readAll(Path file, int[] decoded) {
        List<SampleError> errors = new ArrayList<>();
        try (Dataset d = Datasets.openLocal(file.toString());
                Loader loader = Loader.builder(d)
                        .transform(SMALL)
                        .batchSize(5)
                        .workers(2)
                        .shuffle(false)
                        .onError(ErrorPolicy.SKIP)
                        .build()) {
            for (Batch b : loader) {
                try (b) {
                    errors.addAll(b.skipped());
                    decoded[0] += b.size() - b.skipped().size();
                }
            }
            if (decoded.length > 1) {
                decoded[1] = Math.toIntExact(d.size()); // the samples the footer declares
            }
        }
        return errors;
    }

    @Test
    void aTruncatedFooterIsNamedWhenTheDatasetIsOpened() throws IOException {
        Path file = written("truncated-footer.parquet", CompressionCodecName.UNCOMPRESSED);
        byte[] bytes = Files.readAllBytes(file);
        byte[] cut = new byte[bytes.length - 40];
        System.arraycopy(bytes, 0, cut, 0, cut.length - 8);
        System.arraycopy(bytes, bytes.length - 8, cut, cut.length - 8, 8); // the length and magic of the whole footer
        Files.write(file, cut);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(file.toString()));
        assertTrue(e.getMessage().startsWith(file + " is not a readable Parquet file"), e.getMessage());

        Files.write(file, Arrays.copyOf(bytes, 6)); // nothing but the leading magic
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(file.toString()));
        assertTrue(e.getMessage().startsWith(file + " is not a readable Parquet file"), e.getMessage());
    }

    @Test
    void aFooterThatDeclaresMoreThanTheLimitIsNamedBeforeItIsRead() throws IOException {
        // A real file's row groups, then a footer length of 512 MiB over a sparse gap: parquet-java
        // would allocate the footer's buffer at that length.
        Path file = written("bomb-footer.parquet", CompressionCodecName.UNCOMPRESSED);
        byte[] bytes = Files.readAllBytes(file);
        long footer = 512L << 20;
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(bytes.length - 8 + footer);
            f.seek(bytes.length - 8 + footer);
            f.write(ByteBuffer.allocate(4)
                    .order(ByteOrder.LITTLE_ENDIAN)
                    .putInt((int) footer)
                    .array());
            f.write("PAR1".getBytes());
        }
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(file.toString()));
        assertEquals(file + ": declares a footer of 512 MiB, more than the 64 MiB limit", e.getMessage());

        // 4 GiB less one (a negative int read as signed): over the limit, named the same way.
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(file.toFile(), "rw")) {
            f.seek(f.length() - 8);
            f.write(new byte[] {-1, -1, -1, -1});
        }
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(file.toString()));
        assertTrue(e.getMessage().startsWith(file + ": declares a footer of "), e.getMessage());
    }

    @Test
    void aRowCountLargerThanTheColumnFailsTheMissingRowsByName() throws IOException {
        Path file = written("lying-rows.parquet", CompressionCodecName.SNAPPY);
        rewriteFooter(file, md -> {
            md.getRow_groups().get(1).setNum_rows(PER_GROUP + 3);
            md.setNum_rows(ROWS + 3);
        });
        int[] decoded = {0};
        List<SampleError> errors = readAll(file, decoded);
        assertEquals(ROWS, decoded[0], errors.toString());
        assertEquals(3, errors.size(), errors.toString());
        for (int k = 0; k < 3; k++) {
            SampleError e = errors.get(k);
            assertEquals(SampleStatus.CORRUPT, e.status());
            assertEquals(file + " row " + (2 * PER_GROUP + k), e.path());
            assertEquals("the footer says 11 rows, column image.bytes holds 8 values", e.detail());
        }
    }

    @Test
    void aColumnChunkPastTheEndFailsItsRowGroupAndNoOther() throws IOException {
        Path file = written("chunk-past-end.parquet", CompressionCodecName.UNCOMPRESSED);
        long size = Files.size(file);
        rewriteFooter(file, md -> {
            ColumnChunk c = imageChunk(md, 1);
            c.getMeta_data().setData_page_offset(size + 4096);
            c.getMeta_data().unsetDictionary_page_offset();
        });
        int[] decoded = {0};
        List<SampleError> errors = readAll(file, decoded);
        assertEquals(ROWS - PER_GROUP, decoded[0], errors.toString());
        assertEquals(PER_GROUP, errors.size(), errors.toString());
        for (int k = 0; k < PER_GROUP; k++) {
            SampleError e = errors.get(k);
            assertEquals(file + " row " + (PER_GROUP + k), e.path());
            assertTrue(e.detail().startsWith("cannot read row group 1: "), e.detail());
        }
    }

    @Test
    void randomlyDamagedFilesAreRefusedOrReadWithNamedErrorsUnderEveryCodec() throws IOException {
        long seed = Long.getLong("stoke.fuzz.seed", System.nanoTime());
        System.out.println("HostileParquetTest: damage seed " + seed + " (-Dstoke.fuzz.seed=" + seed + " repeats it)");
        java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
        for (CompressionCodecName codec : List.of(
                CompressionCodecName.UNCOMPRESSED,
                CompressionCodecName.SNAPPY,
                CompressionCodecName.GZIP,
                CompressionCodecName.ZSTD)) {
            byte[] clean = Files.readAllBytes(written("clean-" + codec + ".parquet", codec));
            for (int trial = 0; trial < 12; trial++) {
                byte[] bytes = clean.clone();
                int flips = 1 + random.nextInt(8);
                for (int k = 0; k < flips; k++) {
                    bytes[4 + random.nextInt(bytes.length - 8)] ^= (byte) (1 + random.nextInt(255));
                }
                Path file = tmp.resolve("damaged-" + codec + "-" + trial + ".parquet");
                Files.write(file, bytes);
                int[] decoded = {0, 0}; // decoded, and the dataset's size
                try {
                    List<SampleError> errors = readAll(file, decoded);
                    for (SampleError e : errors) {
                        assertTrue(e.path().startsWith(file + " row "), e.toString());
                    }
                    // Every sample once, decoded or named: as many as the footer declares, which a
                    // flipped row count can raise (the rows it adds fail by name, as in
                    // aRowCountLargerThanTheColumnFailsTheMissingRowsByName); no row is made up.
                    assertEquals(decoded[1], decoded[0] + errors.size(), "every sample once: " + file);
                    assertTrue(decoded[0] <= ROWS, "no more rows decoded than written: " + file);
                } catch (IllegalArgumentException e) {
                    assertTrue(e.getMessage().startsWith(file.toString()), "named: " + e.getMessage());
                } catch (io.stoke.loader.error.NoSampleDecodedException e) {
                    assertTrue(e.getMessage().contains(file + " row "), e.getMessage());
                }
            }
        }
    }

    @Test
    void aPageThatDoesNotDecompressFailsItsRowsByName() throws IOException {
        Path file = written("bad-page.parquet", CompressionCodecName.GZIP);
        long[] at = {0};
        byte[] bytes = Files.readAllBytes(file);
        int length = ByteBuffer.wrap(bytes, bytes.length - 8, 4)
                .order(ByteOrder.LITTLE_ENDIAN)
                .getInt();
        FileMetaData md = Util.readFileMetaData(new ByteArrayInputStream(bytes, bytes.length - 8 - length, length));
        ColumnChunk c = imageChunk(md, 2);
        at[0] = c.getMeta_data().getData_page_offset();
        long chunkEnd = at[0] + c.getMeta_data().getTotal_compressed_size();
        // Past the first page's header, inside its deflate stream: garbage from here.
        for (long o = at[0] + 64; o < Math.min(chunkEnd, at[0] + 400); o++) {
            bytes[(int) o] ^= (byte) 0x5a;
        }
        Files.write(file, bytes);
        int[] decoded = {0};
        List<SampleError> errors = readAll(file, decoded);
        assertEquals(2 * PER_GROUP, decoded[0], "the first two row groups are whole: " + errors);
        assertFalse(errors.isEmpty());
        for (SampleError e : errors) {
            assertTrue(e.path().startsWith(file + " row "), e.path());
            int row = Integer.parseInt(e.path().substring((file + " row ").length()));
            assertTrue(row >= 2 * PER_GROUP, e.toString());
            assertEquals(SampleStatus.CORRUPT, e.status(), e.toString());
            assertTrue(
                    e.detail().contains("column image.bytes cannot be decoded")
                            || e.detail().startsWith("cannot read row group 2"),
                    e.detail());
        }
        assertEquals(ROWS, decoded[0] + errors.size());
    }

    /**
     * Bytes that Thrift reads as sets nested within sets (0x5A: a field holding a set of sets of
     * five), where row group 1's page headers begin and up to the footer: Thrift's skip recurses
     * until the stack ends, and the row groups read so are failed by name, not the reader's thread.
     */
    @Test
    void pageHeadersNestedPastTheStackFailTheirRowGroupsByName() throws IOException {
        assertRowGroupsFromOneFail(
                filledFromRowGroupOne("nested-headers.parquet", (byte) 0x5A),
                "a page header nests deeper than the stack (damaged bytes)");
    }

    /**
     * Bytes that Thrift reads as fields to skip (0x18: a binary field of 24 bytes, over and over),
     * where row group 1's page headers begin and up to the footer: the reader runs out of the chunk
     * inside a header. Thrift says "Socket is closed by peer" of any stream that ends; the rows say
     * that the header's bytes end early, which a user of a local file or a store can act on.
     */
    @Test
    void pageHeadersCutShortSayTheirBytesEndNotThatASocketClosed() throws IOException {
        assertRowGroupsFromOneFail(
                filledFromRowGroupOne("short-headers.parquet", (byte) 0x18),
                "can not read class org.apache.parquet.format.PageHeader: its bytes end inside it"
                        + " (damaged or cut short)");
    }

    /**
     * A file of {@link #ROWS} 320x240 JPEGs, {@link #PER_GROUP} a row group, uncompressed, whose
     * bytes from row group 1's first page header up to the footer are all {@code fill}.
     */
    private Path filledFromRowGroupOne(String name, byte fill) throws IOException {
        List<TestParquet.Row> big = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            big.add(new TestParquet.Row(TestImages.jpeg(320, 240, 100 + i), "big" + i + ".jpg", i % 3));
        }
        Path file = tmp.resolve(name);
        TestParquet.writeHub(file, big, CompressionCodecName.UNCOMPRESSED, PER_GROUP);
        byte[] bytes = Files.readAllBytes(file);
        int length = ByteBuffer.wrap(bytes, bytes.length - 8, 4)
                .order(ByteOrder.LITTLE_ENDIAN)
                .getInt();
        FileMetaData md = Util.readFileMetaData(new ByteArrayInputStream(bytes, bytes.length - 8 - length, length));
        long from = md.getRow_groups().get(1).getColumns().stream()
                .mapToLong(c -> c.getMeta_data().isSetDictionary_page_offset()
                        ? Math.min(
                                c.getMeta_data().getDictionary_page_offset(),
                                c.getMeta_data().getData_page_offset())
                        : c.getMeta_data().getData_page_offset())
                .min()
                .orElseThrow();
        Arrays.fill(bytes, (int) from, bytes.length - 8 - length, fill);
        Files.write(file, bytes);
        return file;
    }

    /** Row group 0 of {@code file} decodes whole; every later row is CORRUPT, "cannot read row group G: " + {@code why}. */
    private void assertRowGroupsFromOneFail(Path file, String why) throws IOException {
        int[] decoded = {0};
        List<SampleError> errors = readAll(file, decoded);
        assertEquals(PER_GROUP, decoded[0], "row group 0 is whole: " + errors);
        assertEquals(ROWS - PER_GROUP, errors.size(), errors.toString());
        for (int k = 0; k < errors.size(); k++) {
            SampleError e = errors.get(k);
            int row = PER_GROUP + k;
            assertEquals(file + " row " + row, e.path());
            assertEquals(SampleStatus.CORRUPT, e.status(), e.toString());
            assertEquals("cannot read row group " + row / PER_GROUP + ": " + why, e.detail());
        }
    }
}
