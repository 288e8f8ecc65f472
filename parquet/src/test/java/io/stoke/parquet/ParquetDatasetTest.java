package io.stoke.parquet;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.testing.ElasticResume;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ParquetDatasetTest {
    static final TransformSpec SMALL = TransformSpec.defaults().withResize(48, 40);
    static final int N = 41;

    @TempDir
    static Path tmp;

    static Path folder;
    static List<TestParquet.Row> rows;

    @BeforeAll
    static void makeData() throws IOException {
        folder = TestImages.imageFolder(tmp.resolve("folder"), N, 4, 3);
        rows = new ArrayList<>();
        try (Dataset d = ImageFolder.scan(folder)) {
            for (int i = 0; i < d.size(); i++) {
                rows.add(new TestParquet.Row(Files.readAllBytes(d.root().resolve(d.path(i))), d.path(i), d.label(i)));
            }
        }
    }

    /** Every batch as (indices, labels, pixel checksum), in order. */
    static List<String> drain(Dataset dataset) {
        return drain(dataset, null);
    }

    static List<String> drain(Dataset dataset, RestartCache cache) {
        List<String> out = new ArrayList<>();
        try (Loader loader = Loader.builder(dataset)
                .transform(SMALL)
                .batchSize(8)
                .workers(2)
                .slots(3)
                .shuffle(false)
                .restartCache(cache)
                .build()) {
            for (Batch b : loader) {
                try (b) {
                    CRC32 crc = new CRC32();
                    crc.update(b.pixels().asByteBuffer());
                    out.add(Arrays.toString(b.indices().toArray(ValueLayout.JAVA_LONG)) + " "
                            + Arrays.toString(b.labels().toArray(ValueLayout.JAVA_INT)) + " " + crc.getValue());
                }
            }
        }
        return out;
    }

    /** The samples an epoch in order under {@code skip} names as failed. */
    static List<SampleError> skipped(Dataset dataset, int batchSize, int workers) {
        List<SampleError> errors = new ArrayList<>();
        try (Loader loader = Loader.builder(dataset)
                .transform(SMALL)
                .batchSize(batchSize)
                .workers(workers)
                .shuffle(false)
                .onError(ErrorPolicy.SKIP)
                .build()) {
            for (Batch b : loader) {
                try (b) {
                    errors.addAll(b.skipped());
                }
            }
        }
        return errors;
    }

    @ParameterizedTest
    @EnumSource(
            value = CompressionCodecName.class,
            names = {"UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD"})
    void theHubsLayoutGivesEveryRowOnceWithItsLabelAndTheFolderPixels(CompressionCodecName codec) throws IOException {
        Path file = tmp.resolve("hub-" + codec + ".parquet");
        TestParquet.writeHub(file, rows, codec, 8);
        List<String> fromFolder;
        try (Dataset d = ImageFolder.scan(folder)) {
            fromFolder = drain(d);
        }
        try (Dataset d = Datasets.openLocal(file.toString())) {
            ShardDataset shards = assertInstanceOf(ShardDataset.class, d);
            assertTrue(
                    shards.shards().shardCount() > 2,
                    "several row groups: " + shards.shards().shardCount());
            assertTrue(shards.shards().labelled());
            assertEquals(N, d.size());
            assertEquals(fromFolder, drain(d));
            assertEquals(fromFolder, drain(d), "read again, with the row groups cached");
        }
    }

    /** The JPEG with its first quantisation value raised by one: the same length, other pixels. */
    static byte[] requantised(byte[] jpeg) {
        byte[] out = jpeg.clone();
        for (int i = 2; i + 5 < out.length; i++) {
            if ((out[i] & 0xFF) == 0xFF && (out[i + 1] & 0xFF) == 0xDB) { // DQT: length, Pq/Tq, then values
                out[i + 5] = (byte) ((out[i + 5] & 0xFF) < 255 ? (out[i + 5] & 0xFF) + 1 : 254);
                return out;
            }
        }
        throw new AssertionError("no DQT segment");
    }

    /**
     * The restart cache over a Parquet file's rows: the uncached batches; then the file written
     * again with one image changed, of the same length where it was, so that every row lies where
     * it did: the file's new version names new entries, and no old copy is served.
     */
    @Test
    void aParquetFileWrittenAgainIsNeverServedItsOldCopies() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path file = tmp.resolve("cached.parquet");
        TestParquet.writeHub(file, rows, CompressionCodecName.UNCOMPRESSED, 8);
        Path dir = tmp.resolve("restart-cache");
        List<String> said = new ArrayList<>();
        try (Dataset d = Datasets.openLocal(file.toString());
                RestartCache cache = RestartCache.open(dir, 1L << 30, said::add)) {
            assertEquals(drain(d), drain(d, cache));
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(N, cache.stats().copied(), cache.stats().toString());
            assertEquals(drain(d), drain(d, cache));
            assertEquals(N, cache.stats().misses(), "the second epoch reads the copies: " + cache.stats());
        }
        List<TestParquet.Row> changed = new ArrayList<>(rows);
        TestParquet.Row five = rows.get(5);
        changed.set(5, new TestParquet.Row(requantised(five.image()), five.path(), five.label()));
        TestParquet.writeHub(file, changed, CompressionCodecName.UNCOMPRESSED, 8);
        Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis() + 5_000));
        try (Dataset d = Datasets.openLocal(file.toString());
                RestartCache cache = RestartCache.open(dir, 1L << 30, said::add)) {
            List<String> uncached = drain(d);
            assertEquals(uncached, drain(d, cache));
            assertEquals(N, cache.stats().misses(), "every row of the file written again: " + cache.stats());
        }
        assertEquals(List.of(), said);
    }

    /**
     * {@link ElasticResume} over Parquet: 4 ranks checkpoint after 3 batches of 50, 2 ranks of 100
     * and 3 of 50 each finish the epoch, every row once, row groups shuffled in windows of 4.
     */
    @Test
    void aRunCheckpointedOnFourRanksFinishesItsEpochOnTwoAndOnThree() throws IOException {
        List<TestParquet.Row> many = new ArrayList<>();
        for (int i = 0; i < 651; i++) {
            TestParquet.Row r = rows.get(i % rows.size());
            many.add(new TestParquet.Row(r.image(), i + "-" + r.path(), r.label()));
        }
        Path file = tmp.resolve("elastic.parquet");
        TestParquet.writeHub(file, many, CompressionCodecName.SNAPPY, 31);
        try (Dataset d = Datasets.openLocal(file.toString())) {
            assertEquals(21, assertInstanceOf(ShardDataset.class, d).shards().shardCount(), "row groups");
            ElasticResume.check(
                    () -> Loader.builder(d)
                            .transform(SMALL)
                            .workers(2)
                            .shuffle(true)
                            .seed(11)
                            .shuffleWindow(4),
                    2);
        }
    }

    @Test
    void aRowGroupOfLargePagesLargerThanParquetJavasReadBufferIsReadWhole() throws IOException {
        // Noise compresses to nothing: 12 MB of pages of 4 MB in one row group, past parquet-java's
        // 8 MB read buffer, so a page would span two buffers if the chunk were read in parts.
        List<TestParquet.Row> big = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            big.add(new TestParquet.Row(
                    TestImages.jpeg(
                            TestImages.rgb(720, 540, i), 720, 540, 3, 100, io.stoke.ffm.TurboJpeg.TJSAMP_444, 0),
                    "noise" + i + ".jpg",
                    i % 2));
        }
        long bytes = big.stream().mapToLong(r -> r.image().length).sum();
        assertTrue(bytes > 9_000_000, "the images are " + bytes + " bytes");
        Path file = tmp.resolve("large-pages.parquet");
        TestParquet.writeHub(file, big, CompressionCodecName.SNAPPY, 1000, 4 << 20);
        try (Dataset d = Datasets.openLocal(file.toString())) {
            assertEquals(1, ((ShardDataset) d).shards().shardCount());
            List<SampleError> errors = skipped(d, 8, 2);
            assertEquals(List.of(), errors);
        }
    }

    @Test
    void img2datasetsLayoutReadsItsBinaryColumnAndNamesRowsByTheirKey() {
        Path file = tmp.resolve("img2dataset.parquet");
        List<TestParquet.Row> keyed = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            TestParquet.Row r = rows.get(i);
            keyed.add(new TestParquet.Row(i == 5 ? new byte[] {1, 2, 3} : r.image(), String.format("%09d", i), -1));
        }
        TestParquet.writeImg2dataset(file, keyed, CompressionCodecName.SNAPPY, 1000);
        UrlDatasetProvider.ShardCache cache = new UrlDatasetProvider.ShardCache(64L << 20, null);
        try (Dataset d = Datasets.openLocalOrUrl(file.toString(), cache, new TableColumns(null, null, "key"))) {
            assertEquals(N, d.size());
            assertEquals(-1, d.label(0));
            assertEquals("000000007", d.path(7));
            assertEquals(file + " row 5 (000000005)", d.name(5));
            List<SampleError> errors = skipped(d, 8, 2);
            assertEquals(1, errors.size(), errors.toString());
            assertEquals(5, errors.get(0).sample());
            assertTrue(errors.get(0).path().contains("row 5"), errors.toString());
        }
    }

    /**
     * A table's deleted rows (a Delta Lake deletion vector's) are left out: the file's samples are
     * the other rows, in row order, across row groups of 8, each with its own image bytes and named by
     * its row in the file; a null image in a deleted row is no error, one in a kept row is named by
     * its row; a deleted row past the file's end is refused, naming the file.
     */
    @Test
    void aTablesDeletedRowsAreLeftOutAndTheRestNamedByTheirRow() throws Exception {
        Path file = tmp.resolve("with-deleted-rows.parquet");
        List<TestParquet.Row> keyed = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            keyed.add(
                    new TestParquet.Row(i == 9 || i == 20 ? null : rows.get(i).image(), String.format("%09d", i), -1));
        }
        TestParquet.writeImg2dataset(file, keyed, CompressionCodecName.SNAPPY, 8);
        long[] deleted = {0, 5, 8, 9, 15, 16, N - 1}; // rows 8 to 15 are one row group; row 9's image is null
        TableColumns key = new TableColumns(null, null, "key");
        List<Integer> kept = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            if (Arrays.binarySearch(deleted, i) < 0) {
                kept.add(i);
            }
        }
        List<ParquetDatasets.TableFile> files =
                List.of(new ParquetDatasets.TableFile(file.toString(), Files.size(file), deleted));
        try (ShardDataset d = ParquetDatasets.openFiles(files, key, 64L << 20, null)) {
            assertEquals(kept.size(), d.size());
            try (SampleReader reader = d.reader(1 << 20)) {
                for (int i = 0; i < d.size(); i++) {
                    int row = kept.get(i);
                    assertEquals(String.format("%09d", row), d.path(i));
                    assertEquals(file + " row " + row + " (" + d.path(i) + ")", d.name(i));
                    if (row == 20) {
                        assertEquals(SampleStatus.NO_IMAGE, reader.read(i));
                        continue;
                    }
                    assertEquals(SampleStatus.OK, reader.read(i), reader.message());
                    assertArrayEquals(
                            rows.get(row).image(),
                            reader.bytes().asSlice(0, reader.length()).toArray(ValueLayout.JAVA_BYTE),
                            "sample " + i + " is row " + row);
                    reader.done();
                }
            }
            List<SampleError> errors = skipped(d, 8, 2);
            assertEquals(1, errors.size(), "row 9's null image is deleted; row 20's is not: " + errors);
            assertEquals(file + " row 20 (000000020)", errors.get(0).path());
        }
        List<ParquetDatasets.TableFile> past =
                List.of(new ParquetDatasets.TableFile(file.toString(), Files.size(file), new long[] {3, N}));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> ParquetDatasets.openFiles(past, key, 64L << 20, null));
        assertTrue(
                e.getMessage().contains(file.toString()) && e.getMessage().contains("deletes row " + N),
                e.getMessage());
    }

    @Test
    void aNullImageIsASampleErrorNamingTheFileAndTheRow() {
        Path file = tmp.resolve("null-image.parquet");
        List<TestParquet.Row> some = new ArrayList<>(rows.subList(0, 10));
        some.set(3, new TestParquet.Row(null, "gone.jpg", 1));
        TestParquet.writeHub(file, some, CompressionCodecName.UNCOMPRESSED, 1000);
        try (Dataset d = Datasets.openLocal(file.toString())) {
            List<SampleError> errors = skipped(d, 4, 1);
            assertEquals(1, errors.size(), errors.toString());
            SampleError e = errors.get(0);
            assertEquals(SampleStatus.NO_IMAGE, e.status());
            assertEquals(file + " row 3", e.path());
            assertTrue(e.detail().contains("image.bytes is null"), e.detail());
        }
    }

    @Test
    void aFolderOfPartsSkipsSparksSideFilesAndAGlobTakesNameOrder() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("table"));
        TestParquet.writeHub(dir.resolve("part-00001.parquet"), rows.subList(20, N), CompressionCodecName.SNAPPY, 1000);
        TestParquet.writeHub(dir.resolve("part-00000.parquet"), rows.subList(0, 20), CompressionCodecName.SNAPPY, 1000);
        Files.writeString(dir.resolve("_SUCCESS"), "");
        Files.writeString(dir.resolve(".part-00000.parquet.crc"), "crc");
        Files.writeString(dir.resolve("README.md"), "not a part");
        List<String> fromFolder;
        try (Dataset d = ImageFolder.scan(folder)) {
            fromFolder = drain(d);
        }
        for (String spec : List.of(
                dir.toString(),
                dir.resolve("part-*.parquet").toString(),
                dir.resolve("part-{00000..00001}.parquet").toString())) {
            try (Dataset d = Datasets.openLocal(spec)) {
                assertEquals(N, d.size(), spec);
                assertEquals(fromFolder, drain(d), spec);
            }
        }
    }

    /**
     * A .parquet name in a folder, a glob or a pattern that is not a file (a pipe, a link to nothing:
     * a volume not mounted) is named when the dataset is opened, never left out of it.
     */
    @Test
    void aPartThatIsNotAFileIsNamedNotLeftOut() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("parts"));
        TestParquet.writeHub(dir.resolve("part-00000.parquet"), rows.subList(0, 20), CompressionCodecName.SNAPPY, 1000);
        Path pipe = dir.resolve("part-00001.parquet");
        assertEquals(0, new ProcessBuilder("mkfifo", pipe.toString()).start().waitFor());
        for (String spec : List.of(
                dir.toString(),
                dir.resolve("part-*.parquet").toString(),
                dir.resolve("part-{00000..00001}.parquet").toString(),
                pipe.toString())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(spec));
            assertTrue(
                    e.getMessage()
                                    .startsWith("Parquet file "
                                            + (spec.equals(dir.toString()) || spec.contains("*")
                                                    ? pipe.toString()
                                                    : spec.contains("{") ? pipe + " (from " + spec + ")" : spec))
                            && e.getMessage().endsWith(" is a pipe (FIFO), not a file"),
                    spec + ": " + e.getMessage());
        }
        Files.delete(pipe);
        Path unmounted = tmp.resolve("volume-not-mounted").resolve("part-00001.parquet");
        Files.createSymbolicLink(pipe, unmounted);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(dir.toString()));
        assertEquals("Parquet file " + pipe + " is a link to " + unmounted + ", which does not exist", e.getMessage());
    }

    @Test
    void aMissingOrMistypedColumnIsNamedWhenTheDatasetIsOpened() {
        Path file = tmp.resolve("columns.parquet");
        TestParquet.writeImg2dataset(file, rows.subList(0, 3), CompressionCodecName.UNCOMPRESSED, 1000);
        UrlDatasetProvider.ShardCache cache = new UrlDatasetProvider.ShardCache(64L << 20, null);
        IllegalArgumentException missing = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocalOrUrl(file.toString(), cache, new TableColumns("image", null, null)));
        assertEquals(file + " has no image column image (its columns: key, caption, jpg, width)", missing.getMessage());
        IllegalArgumentException image = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocalOrUrl(file.toString(), cache, new TableColumns("width", null, null)));
        assertTrue(image.getMessage().startsWith(file + ": column width is int32"), image.getMessage());
        IllegalArgumentException label = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocalOrUrl(file.toString(), cache, new TableColumns(null, "caption", null)));
        assertTrue(label.getMessage().startsWith(file + ": label column caption is binary"), label.getMessage());
    }
}
