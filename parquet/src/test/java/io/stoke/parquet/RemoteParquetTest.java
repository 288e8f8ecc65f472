package io.stoke.parquet;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.testing.TestImages;
import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteOptions;
import io.stoke.remote.S3ObjectStore;
import io.stoke.remote.TestS3Server;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Parquet files in a real S3 server (s3proxy): the same samples and pixels as the files read locally. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RemoteParquetTest {
    static final String BUCKET = "data";
    static final int FILES = 4;
    static final int PER_FILE = 12;

    static TestS3Server.TestAwsProperties properties;
    static TestS3Server s3;
    static Path local;

    @BeforeAll
    static void start(@TempDir Path home) throws Exception {
        properties = new TestS3Server.TestAwsProperties(home);
        s3 = new TestS3Server();
        System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
        s3.createBucket(BUCKET, false);
        local = Files.createDirectories(home.resolve("hub"));
        for (int f = 0; f < FILES; f++) {
            List<TestParquet.Row> rows = new ArrayList<>();
            for (int i = 0; i < PER_FILE; i++) {
                int n = f * PER_FILE + i;
                rows.add(new TestParquet.Row(TestImages.jpeg(40 + n, 30 + n % 7, n), "img" + n + ".jpg", n % 5));
            }
            Path file = local.resolve(String.format("train-%05d-of-%05d.parquet", f, FILES));
            TestParquet.writeHub(file, rows, CompressionCodecName.SNAPPY, 5);
            s3.put(BUCKET, "hub/" + file.getFileName(), Files.readAllBytes(file));
            s3.put(BUCKET, "copy/" + file.getFileName(), Files.readAllBytes(file));
        }
        s3.put(BUCKET, "hub/_SUCCESS", new byte[0]);
        s3.put(BUCKET, "hub/.part.crc", "crc".getBytes());
    }

    @AfterAll
    static void stop() throws Exception {
        if (s3 != null) {
            s3.close();
        }
        if (properties != null) {
            properties.close();
        }
    }

    static final UrlDatasetProvider.ShardCache CACHE = new UrlDatasetProvider.ShardCache(64L << 20, null);

    static String messages(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            b.append(t.getMessage()).append(" / ");
        }
        return b.toString();
    }

    static List<String> drain(Dataset d) {
        return ParquetDatasetTest.drain(d);
    }

    @Test
    void aGlobABracePatternAndAFolderReadTheLocalFilesRowsAndPixels() {
        List<String> fromLocal;
        try (Dataset d = Datasets.openLocal(local.toString())) {
            fromLocal = drain(d);
        }
        for (String spec : List.of(
                "s3://" + BUCKET + "/hub/*.parquet", "s3://" + BUCKET + "/hub/train-{00000..00003}-of-00004.parquet")) {
            try (Dataset d = Datasets.openLocalOrUrl(spec, CACHE, TableColumns.DEFAULT)) {
                ShardDataset shards = assertInstanceOf(ShardDataset.class, d);
                assertTrue(shards.shards().remote());
                assertEquals(FILES * PER_FILE, d.size(), spec);
                assertEquals("s3://" + BUCKET + "/hub/train-00001-of-00004.parquet row 2", d.name(PER_FILE + 2));
                assertEquals(fromLocal, drain(d), spec);
            }
        }
        // A folder: its .parquet objects, side files skipped; told from tar shards by its listing, or
        // by the columns named.
        try (Dataset d = Datasets.openLocalOrUrl("s3://" + BUCKET + "/hub/", CACHE, TableColumns.DEFAULT)) {
            assertEquals(fromLocal, drain(d), "a folder");
        }
        try (Dataset d =
                Datasets.openLocalOrUrl("s3://" + BUCKET + "/hub/", CACHE, new TableColumns("image", "label", null))) {
            assertEquals(fromLocal, drain(d), "a folder, columns named");
        }
    }

    /**
     * Over HTTP, which lists nothing, a folder of Parquet files opens from its catalog, named with
     * or without its last '/'; without a catalog it is refused, saying what to name or serve instead.
     */
    @Test
    void overHttpAFolderOpensFromItsParquetCatalog() throws Exception {
        s3.createBucket("web", true);
        for (int f = 0; f < FILES; f++) {
            s3.put("web", "hub/" + fileName(f), Files.readAllBytes(local.resolve(fileName(f))), true);
            s3.put("web", "bare/" + fileName(f), Files.readAllBytes(local.resolve(fileName(f))), true);
        }
        // Written by its S3 API, then served to anyone, as a public bucket's policy would.
        ParquetDatasets.writeCatalog("s3://web/hub/");
        try (ObjectStore store = ObjectStore.forUrl("s3://web/hub/", RemoteOptions.defaults())) {
            byte[] catalog = store.readBytes("s3://web/hub/" + ParquetCatalog.FILE);
            s3.put("web", "hub/" + ParquetCatalog.FILE, catalog, true);
        }
        List<String> fromLocal;
        try (Dataset d = Datasets.openLocal(local.toString())) {
            fromLocal = drain(d);
        }
        String web = "http://127.0.0.1:" + s3.port() + "/web/";
        for (String folder : List.of(web + "hub/", web + "hub")) {
            try (Dataset d = Datasets.openLocalOrUrl(folder, CACHE, TableColumns.DEFAULT)) {
                assertEquals(web + "hub/train-00001-of-00004.parquet row 2", d.name(PER_FILE + 2), folder);
                assertEquals(fromLocal, drain(d), folder);
            }
        }
        // A local folder's catalog (`stoke catalog FOLDER`), served with the files as they are: it
        // carries no ETag, and the first read of each file pins the server's.
        Path served = Files.createDirectories(local.resolveSibling("served"));
        for (int f = 0; f < FILES; f++) {
            Files.copy(local.resolve(fileName(f)), served.resolve(fileName(f)));
        }
        assertEquals(served.resolve(ParquetCatalog.FILE).toString(), ParquetDatasets.writeCatalog(served.toString()));
        try (Dataset d = Datasets.openLocal(served.toString())) {
            assertEquals(fromLocal, drain(d), "a local folder opens from its footers, beside its catalog");
        }
        try (java.util.stream.Stream<Path> all = Files.list(served)) {
            for (Path file : all.toList()) {
                s3.put("web", "served/" + file.getFileName(), Files.readAllBytes(file), true);
            }
        }
        try (Dataset d = Datasets.openLocalOrUrl(web + "served", CACHE, TableColumns.DEFAULT)) {
            assertEquals(fromLocal, drain(d), "served");
        }
        RuntimeException e = assertThrows(
                RuntimeException.class, () -> Datasets.openLocalOrUrl(web + "bare/", CACHE, TableColumns.DEFAULT));
        assertTrue(
                messages(e).contains("HTTP has no directory listing")
                        && messages(e).contains("parquet-index.json for Parquet"),
                messages(e));
    }

    /**
     * A catalog of files in sub-folders ({@code stoke catalog 's3://bucket/nest/part-{0..3}/train.parquet'}
     * writes it into {@code nest/}): the folder opens as all of its files, as the catalog lists them.
     */
    @Test
    void aFolderOpensAsEveryFileItsCatalogLists() throws Exception {
        for (int f = 0; f < FILES; f++) {
            s3.put(BUCKET, "nest/part-" + f + "/train.parquet", Files.readAllBytes(local.resolve(fileName(f))));
        }
        assertEquals(
                "s3://" + BUCKET + "/nest/" + ParquetCatalog.FILE,
                ParquetDatasets.writeCatalog("s3://" + BUCKET + "/nest/part-{0..3}/train.parquet"));
        List<String> fromLocal;
        try (Dataset d = Datasets.openLocal(local.toString())) {
            fromLocal = drain(d);
        }
        try (Dataset d = Datasets.openLocalOrUrl("s3://" + BUCKET + "/nest/", CACHE, TableColumns.DEFAULT)) {
            assertEquals("s3://" + BUCKET + "/nest/part-1/train.parquet row 2", d.name(PER_FILE + 2));
            assertEquals(fromLocal, drain(d));
        }
    }

    @Test
    void shuffledWindowsOfRowGroupsGiveEveryRowOnceAnEpoch() {
        try (Dataset d = Datasets.openLocalOrUrl("s3://" + BUCKET + "/hub/*.parquet", CACHE, TableColumns.DEFAULT)) {
            Loader.Builder builder = Loader.builder(d)
                    .transform(ParquetDatasetTest.SMALL)
                    .batchSize(7)
                    .workers(2)
                    .shuffle(true)
                    .seed(5)
                    .epochs(2);
            assertEquals(8, builder.shuffleWindow(), "row groups are shuffled within windows");
            epochs(builder);
        }
    }

    private static void epochs(Loader.Builder builder) {
        try (Loader loader = builder.build()) {
            List<List<Long>> epochs = List.of(new ArrayList<>(), new ArrayList<>());
            for (Batch b : loader) {
                try (b) {
                    for (long i : b.indices().toArray(ValueLayout.JAVA_LONG)) {
                        epochs.get((int) b.epoch()).add(i);
                    }
                }
            }
            for (List<Long> seen : epochs) {
                assertEquals(FILES * PER_FILE, seen.size());
                assertEquals(FILES * PER_FILE, seen.stream().distinct().count());
            }
            assertNotEquals(epochs.get(0), epochs.get(1));
        }
    }

    @Test
    void aCatalogOpensTheFilesFromOneObjectAndNamesAFileReplacedSince() throws Exception {
        String folder = "s3://" + BUCKET + "/copy/";
        assertEquals(folder + ParquetCatalog.FILE, ParquetDatasets.writeCatalog(folder));
        List<String> fromLocal;
        try (Dataset d = Datasets.openLocal(local.toString())) {
            fromLocal = drain(d);
        }
        try (Dataset d = Datasets.openLocalOrUrl(folder + "*.parquet", CACHE, TableColumns.DEFAULT)) {
            assertEquals(fromLocal, drain(d));
        }
        // Replaced after indexing: opening reads only the catalog (so it opens), reading the file names it.
        byte[] other = Files.readAllBytes(local.resolve("train-00000-of-00004.parquet"));
        other[other.length / 2] ^= 1;
        s3.put(BUCKET, "copy/train-00002-of-00004.parquet", other);
        try (Dataset d = Datasets.openLocalOrUrl(folder + "*.parquet", CACHE, TableColumns.DEFAULT)) {
            assertEquals(FILES * PER_FILE, d.size());
            RuntimeException e = assertThrows(RuntimeException.class, () -> {
                try (Loader loader = Loader.builder(d)
                        .transform(ParquetDatasetTest.SMALL)
                        .batchSize(6)
                        .workers(2)
                        .shuffle(false)
                        .onError(ErrorPolicy.SKIP)
                        .build()) {
                    for (Batch b : loader) {
                        b.close();
                    }
                }
            });
            // As for a remote tar shard: the run ends naming the file, never a short epoch.
            String all = messages(e);
            assertTrue(all.contains(folder + "train-00002-of-00004.parquet"), all);
            assertTrue(
                    all.contains("the object changed since the catalog " + folder + ParquetCatalog.FILE
                            + " was written: run `stoke catalog` on the files again"),
                    all);
        }
        // Doing so: a file replaced by a whole one and a file added since are catalogued as they are
        // now, not as the stale catalog listed them; and so over a catalog that no longer parses.
        Path now = Files.createDirectories(local.resolveSibling("copy-now"));
        for (int f = 0; f < FILES; f++) {
            Files.copy(local.resolve(fileName(f == 2 ? 0 : f)), now.resolve(fileName(f)));
        }
        Files.copy(local.resolve(fileName(1)), now.resolve(fileName(FILES)));
        s3.put(BUCKET, "copy/" + fileName(2), Files.readAllBytes(now.resolve(fileName(2))));
        s3.put(BUCKET, "copy/" + fileName(FILES), Files.readAllBytes(now.resolve(fileName(FILES))));
        List<String> fromNow;
        try (Dataset d = Datasets.openLocal(now.toString())) {
            fromNow = drain(d);
        }
        for (String catalogThere : List.of("stale", "unreadable")) {
            if (catalogThere.equals("unreadable")) {
                s3.put(BUCKET, "copy/" + ParquetCatalog.FILE, "1190;chunk-signature=0\r\n{\"format\"".getBytes());
            }
            assertEquals(folder + ParquetCatalog.FILE, ParquetDatasets.writeCatalog(folder + "*.parquet"));
            try (Dataset d = Datasets.openLocalOrUrl(folder + "*.parquet", CACHE, TableColumns.DEFAULT)) {
                assertEquals((FILES + 1) * PER_FILE, d.size(), catalogThere);
                assertEquals(fromNow, drain(d), catalogThere);
            }
        }
        // A file removed since: named with the catalog that still lists it, not only "not found".
        try (ObjectStore store = ObjectStore.forUrl(folder, RemoteOptions.defaults())) {
            store.delete(folder + fileName(FILES));
        }
        try (Dataset d = Datasets.openLocalOrUrl(folder + "*.parquet", CACHE, TableColumns.DEFAULT)) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> drain(d));
            String all = messages(e);
            assertTrue(
                    all.contains(folder + fileName(FILES) + ": the catalog " + folder + ParquetCatalog.FILE
                                    + " lists it, but the store has no such object")
                            && all.contains("run `stoke catalog` on the files again"),
                    all);
        }
    }

    /** The name of file {@code f}, as {@link #start} writes them ({@code f} may be past the last). */
    private static String fileName(int f) {
        return String.format("train-%05d-of-%05d.parquet", f, FILES);
    }
}
