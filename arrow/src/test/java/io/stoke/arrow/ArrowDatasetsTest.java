package io.stoke.arrow;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Arrow IPC stream files that pyarrow wrote as datasets lays out an Image feature (the fixtures'
 * make_fixtures.py): each image read where it lies equals the file it was made from, byte for byte.
 */
class ArrowDatasetsTest {
    static final Path HF = Path.of("src/test/resources/hf");
    static final int[] LABELS = {0, 1, 2, 0, 1, 2, 0};

    static byte[] image(int i) throws IOException {
        return Files.readAllBytes(HF.resolve("img" + i + ".png"));
    }

    static byte[] read(SampleReader reader, int sample) {
        assertEquals(SampleStatus.OK, reader.read(sample), reader.message());
        byte[] bytes = reader.bytes().asSlice(0, reader.length()).toArray(ValueLayout.JAVA_BYTE);
        reader.done();
        return bytes;
    }

    @Test
    void imagesStoredAsBytesAreReadInPlaceAcrossRecordBatches() throws IOException {
        try (Dataset d = Datasets.openLocalOrUrl(HF.resolve("bytes.arrow").toString(), null);
                SampleReader reader = d.reader(1 << 20)) {
            ShardDataset shards = assertInstanceOf(ShardDataset.class, d);
            assertEquals(7, d.size());
            assertEquals(1, shards.shards().shardCount());
            assertFalse(shards.shards().cached(), "a mapped file is shuffled whole, not in windows");
            for (int i = 0; i < 7; i++) {
                assertEquals(LABELS[i], d.label(i), "label of row " + i);
                if (i == 5) {
                    assertEquals(SampleStatus.NO_IMAGE, shards.shards().status(i));
                    assertNotEquals(SampleStatus.OK, reader.read(i));
                    assertTrue(reader.message().contains("image is null"), reader.message());
                    continue;
                }
                assertArrayEquals(image(i), read(reader, i), "row " + i);
            }
            assertTrue(d.name(3).endsWith("bytes.arrow row 3"), d.name(3));
        }
    }

    @Test
    void imagesStoredAsPathsAreTheirFiles() throws IOException {
        try (Dataset d = Datasets.openLocalOrUrl(
                        HF.resolve("paths.arrow").toString(), null, new TableColumns("image", "label", null));
                SampleReader reader = d.reader(1 << 20)) {
            assertInstanceOf(FileDataset.class, d);
            assertEquals(7, d.size());
            for (int i = 0; i < 7; i++) {
                assertEquals("src/test/resources/hf/img" + i + ".png", d.path(i));
                assertEquals(LABELS[i], d.label(i));
                assertArrayEquals(image(i), read(reader, i), "row " + i);
            }
        }
    }

    @Test
    void anIndicesMappingGivesEachSampleItsRow() throws IOException {
        String spec = Datasets.ARROW_SPEC + "{\"files\": [\"" + HF.resolve("bytes.arrow") + "\"], \"indices\": \""
                + HF.resolve("indices.arrow") + "\"}";
        int[] rows = {6, 0, 3, 3, 1};
        try (Dataset d = Datasets.openLocalOrUrl(spec, (UrlDatasetProvider.ShardCache) null);
                SampleReader reader = d.reader(1 << 20)) {
            assertEquals(rows.length, d.size());
            for (int i = 0; i < rows.length; i++) {
                assertEquals(LABELS[rows[i]], d.label(i));
                assertArrayEquals(image(rows[i]), read(reader, i), "sample " + i + ", row " + rows[i]);
            }
        }
    }

    @Test
    void twoFilesAreOneDatasetInOrder() throws IOException {
        String spec = Datasets.ARROW_SPEC + "{\"files\": [\"" + HF.resolve("bytes.arrow") + "\", \""
                + HF.resolve("bytes.arrow") + "\"], \"indices\": null}";
        try (Dataset d = Datasets.openLocalOrUrl(spec, (UrlDatasetProvider.ShardCache) null);
                SampleReader reader = d.reader(1 << 20)) {
            assertEquals(14, d.size());
            assertArrayEquals(image(2), read(reader, 9));
            assertEquals(LABELS[2], d.label(9));
        }
    }

    @Test
    void aSaveToDiskFolderIsTheFilesItsStateLists(@TempDir Path dir) throws IOException {
        Files.copy(HF.resolve("bytes.arrow"), dir.resolve("data-00000-of-00002.arrow"));
        Files.copy(HF.resolve("bytes.arrow"), dir.resolve("data-00001-of-00002.arrow"));
        Files.writeString(dir.resolve("state.json"), """
                {"_data_files": [{"filename": "data-00000-of-00002.arrow"}, {"filename": "data-00001-of-00002.arrow"}],
                 "_fingerprint": "x", "_format_columns": null, "_format_kwargs": {}, "_format_type": null,
                 "_output_all_columns": false, "_split": "train"}
                """);
        assertTrue(Datasets.isArrow(dir.toString()));
        try (Dataset d = Datasets.openLocal(dir.toString());
                SampleReader reader = d.reader(1 << 20)) {
            assertEquals(14, d.size());
            assertArrayEquals(image(6), read(reader, 13));
            assertTrue(d.name(13).endsWith("data-00001-of-00002.arrow row 6"), d.name(13));
        }
    }

    @Test
    void imagesStoredBothWaysAreRefusedByName() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocalOrUrl(HF.resolve("mixed.arrow").toString(), null));
        assertTrue(
                e.getMessage().contains("mixed.arrow") && e.getMessage().contains("3 images as bytes and 4 as paths"),
                e.getMessage());
    }

    @Test
    void compressedRecordBatchesAreRefusedByName() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocalOrUrl(HF.resolve("compressed.arrow").toString(), null));
        assertTrue(e.getMessage().contains("compressed.arrow") && e.getMessage().contains("LZ4_FRAME"), e.getMessage());
    }

    @Test
    void aFileThatIsNotArrowIsNamed() throws IOException {
        Path png = Files.createTempFile("not", ".arrow");
        try {
            Files.write(png, image(0));
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> Datasets.openLocalOrUrl(png.toString(), null));
            assertTrue(
                    e.getMessage().contains(png.toString()) && e.getMessage().contains("not an Arrow"), e.getMessage());
        } finally {
            Files.delete(png);
        }
    }

    @Test
    void aMissingColumnIsNamed() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocalOrUrl(
                        HF.resolve("paths.arrow").toString(), null, new TableColumns("picture", null, null)));
        assertTrue(e.getMessage().contains("no column picture"), e.getMessage());
    }
}
