package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.testing.CapturedRun;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Parquet datasets written by DuckDB (its own writer, not parquet-java): every row once, with its label and the pixels of the same image
 * read from its folder, under each codec DuckDB writes.
 */
class ParquetCommandsTest {
    static final int N = 30;
    static final TransformSpec SMALL = TransformSpec.defaults().withResize(48, 40);

    @TempDir
    static Path tmp;

    static Path folder;

    @BeforeAll
    static void makeData() throws Exception {
        folder = TestImages.imageFolder(tmp.resolve("folder"), N, 3, 11);
        // read_blob gives each file's bytes; ordered by path, rows come in ImageFolder's order.
        String images = "SELECT {'bytes': content, 'path': substr(filename, "
                + (folder.toString().length() + 2)
                + ")} AS image, regexp_extract(filename, 'class(\\d+)', 1)::BIGINT AS label FROM read_blob('"
                + folder + "/*/*.jpg') ORDER BY filename";
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            for (String codec : List.of("uncompressed", "snappy", "zstd", "gzip")) {
                s.execute("COPY (" + images + ") TO '" + tmp.resolve("hub-" + codec + ".parquet")
                        + "' (FORMAT parquet, COMPRESSION " + codec + ")");
            }
            Path parts = Files.createDirectories(tmp.resolve("hub-parts"));
            s.execute("COPY (" + images + " LIMIT 12) TO '" + parts.resolve("train-00000-of-00002.parquet")
                    + "' (FORMAT parquet)");
            s.execute("COPY (" + images + " OFFSET 12) TO '" + parts.resolve("train-00001-of-00002.parquet")
                    + "' (FORMAT parquet)");
            s.execute("COPY (SELECT lpad((row_number() OVER (ORDER BY filename) - 1)::VARCHAR, 9, '0') AS key, "
                    + "'a photograph' AS caption, content AS jpg, 224 AS width FROM read_blob('" + folder
                    + "/*/*.jpg') ORDER BY filename) TO '" + tmp.resolve("img2dataset.parquet")
                    + "' (FORMAT parquet, COMPRESSION snappy)");
        }
    }

    static List<String> drain(Dataset dataset) {
        return drain(dataset, SMALL, null);
    }

    static List<String> drain(Dataset dataset, TransformSpec spec, RestartCache cache) {
        List<String> out = new ArrayList<>();
        try (Loader loader = Loader.builder(dataset)
                .transform(spec)
                .batchSize(7)
                .workers(2)
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

    @Test
    void duckdbsParquetUnderEveryCodecGivesTheFoldersSamplesAndPixels() {
        List<String> fromFolder;
        try (Dataset d = ImageFolder.scan(folder)) {
            fromFolder = drain(d);
        }
        for (String spec : List.of(
                tmp.resolve("hub-uncompressed.parquet").toString(),
                tmp.resolve("hub-snappy.parquet").toString(),
                tmp.resolve("hub-zstd.parquet").toString(),
                tmp.resolve("hub-gzip.parquet").toString(),
                tmp.resolve("hub-parts").toString(),
                tmp.resolve("hub-parts/train-*-of-00002.parquet").toString())) {
            try (Dataset d = Datasets.openLocal(spec)) {
                assertInstanceOf(ShardDataset.class, d);
                assertEquals(N, d.size(), spec);
                assertEquals(fromFolder, drain(d), spec);
            }
        }
    }

    /**
     * {@code stoke cache} over a Parquet file copies every row's JPEG; a loader over the file reads
     * the copies (every row a hit), and gives the folder's pixels under both transforms.
     */
    @Test
    void stokeCacheCopiesEveryRowAndTheLoaderReadsTheCopiesWithTheFoldersPixels() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path dir = tmp.resolve("restart-cache");
        String file = tmp.resolve("hub-snappy.parquet").toString();
        String[] r = CapturedRun.of(() -> Main.execute("cache", file, "--restart-cache-dir", dir.toString()));
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains(": " + N + " copied, 0 to be read as they are"), r[1]);
        TransformSpec train = TransformSpec.defaults().withTrain(40, RandomResizedCrop.defaults());
        List<String> said = new ArrayList<>();
        for (TransformSpec spec : List.of(SMALL, train)) {
            List<String> fromFolder;
            try (Dataset d = ImageFolder.scan(folder)) {
                fromFolder = drain(d, spec, null);
            }
            try (Dataset d = Datasets.openLocal(file);
                    RestartCache cache = RestartCache.open(dir, 1L << 30, said::add)) {
                assertEquals(fromFolder, drain(d, spec, cache), spec.toString());
                assertEquals(N, cache.stats().hits(), cache.stats().toString());
                assertEquals(0, cache.stats().misses(), cache.stats().toString());
            }
        }
        assertEquals(List.of(), said);
    }

    @Test
    void img2datasetsBinaryColumnHasNoLabelsAndTheKeyColumnNamesRows() {
        Path file = tmp.resolve("img2dataset.parquet");
        UrlDatasetProvider.ShardCache cache = new UrlDatasetProvider.ShardCache(1L << 30, null);
        try (Dataset d = Datasets.openLocalOrUrl(file.toString(), cache, new TableColumns(null, null, "key"))) {
            assertEquals(N, d.size());
            assertEquals(-1, d.label(3));
            d.reader(1 << 20).close();
            assertEquals("000000004", d.path(4));
            assertEquals(file + " row 4 (000000004)", d.name(4));
        }
    }

    /**
     * {@code stoke catalog} on local Parquet files writes their Parquet catalog beside them (for the
     * folder served over HTTP: RemoteParquetTest reads one so), never a shard catalog whose "shards"
     * are row groups named {@code FILE row group N}, which no server has.
     */
    @Test
    void catalogOnLocalParquetFilesWritesTheirParquetCatalog() throws Exception {
        Path parts = tmp.resolve("hub-parts");
        for (String spec : List.of(parts.toString(), parts + "/*.parquet")) {
            String[] r = CapturedRun.of(() -> Main.execute("catalog", spec));
            assertEquals("0", r[0], r[1] + r[2]);
            assertTrue(r[2].contains(parts.resolve("parquet-index.json").toString()), r[2]);
            assertFalse(Files.exists(parts.resolve("index.json")), spec);
            JsonNode catalog = new ObjectMapper()
                    .readTree(parts.resolve("parquet-index.json").toFile());
            assertEquals("stoke-parquet-index", catalog.get("format").asText());
            assertEquals(
                    "train-00001-of-00002.parquet",
                    catalog.get("files").get(1).get("url").asText());
            assertEquals(
                    Files.size(parts.resolve("train-00001-of-00002.parquet")),
                    catalog.get("files").get(1).get("filesize").asLong());
            // The mode the umask gives, as any file written here: a web server's own user reads it.
            Path probe = Files.createFile(tmp.resolve("probe-" + System.nanoTime()));
            assertEquals(
                    Files.getPosixFilePermissions(probe),
                    Files.getPosixFilePermissions(parts.resolve("parquet-index.json")),
                    spec);
        }
        String[] out = CapturedRun.of(() -> Main.execute(
                "catalog", parts.toString(), "--out", tmp.resolve("x.json").toString()));
        assertEquals(Integer.toString(Main.EXIT_USAGE), out[0], out[1] + out[2]);
        assertTrue(out[2].contains("a Parquet catalog is written beside its files"), out[2]);
    }

    @Test
    void benchReadsParquetAndSaysWhenItHasNoLabels() throws Exception {
        Path json = tmp.resolve("bench.json");
        String[] r = CapturedRun.of(() -> Main.execute(
                "bench",
                tmp.resolve("img2dataset.parquet").toString(),
                "--key-column",
                "key",
                "--batch-size",
                "6",
                "--workers",
                "2",
                "--resize",
                "40",
                "--crop",
                "32",
                "--warmup-images",
                "6",
                "--json",
                json.toString()));
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[2].contains("no integer label column in"), r[2]);
        JsonNode j = new ObjectMapper().readTree(json.toFile());
        assertEquals(N, j.get("images").asLong(), j.toString());

        String[] wrong = CapturedRun.of(() ->
                Main.execute("bench", tmp.resolve("img2dataset.parquet").toString(), "--label-column", "caption"));
        assertNotEquals("0", wrong[0]);
        assertTrue(wrong[2].contains("label column caption is binary"), wrong[2]);

        String[] notTable = CapturedRun.of(() -> Main.execute("bench", folder.toString(), "--image-column", "jpg"));
        assertNotEquals("0", notTable[0]);
        assertTrue(notTable[2].contains("is neither a Parquet nor an Arrow dataset"), notTable[2]);
    }
}
