package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.StokeImage;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardCatalog;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.testing.ElasticResume;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.TransformSpec;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32;
import javax.imageio.ImageIO;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shards read from a real S3 server on loopback (s3proxy, started here) through the bounded cache:
 * the same samples, names, labels and pixels as the same shards read locally, each sample once per
 * epoch whatever the cache's size; faults (a 503 burst, a connection dropped mid-shard) retried
 * with nothing lost or repeated; a missing shard and a server that is down named at once.
 */
class RemoteShardsTest {
    static final TransformSpec SMALL = TransformSpec.defaults().withResize(40, 32);
    static final String BUCKET = "data";
    static final int SHARDS = 5;
    static final int PER_SHARD = 7;
    static TestS3Server.TestAwsProperties properties;

    static TestS3Server s3;
    static Path local;
    static long largest;

    @BeforeAll
    static void start(@TempDir Path home) throws Exception {
        properties = new TestS3Server.TestAwsProperties(home);
        s3 = new TestS3Server();
        System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
        s3.createBucket(BUCKET, false);
        local = Files.createDirectories(home.resolve("shards"));
        for (int s = 0; s < SHARDS; s++) {
            Path file = local.resolve("train-" + s + ".tar");
            TestTars.labelledShard(file, s, PER_SHARD);
            byte[] bytes = Files.readAllBytes(file);
            largest = Math.max(largest, bytes.length);
            s3.put(BUCKET, "train/train-" + s + ".tar", bytes);
        }
        s3.put(BUCKET, "train/notes.txt", "not a shard".getBytes(StandardCharsets.US_ASCII));
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

    static RemoteOptions fast() {
        return new RemoteOptions(4, 64 * 1024, 5, Duration.ofSeconds(8), Duration.ofSeconds(2));
    }

    /** (index -> label:crc) of one epoch, asserting that no sample comes twice. */
    static Map<Long, String> epoch(Dataset dataset, boolean shuffle, int window, List<Long> order) {
        Map<Long, String> out = new TreeMap<>();
        try (Loader loader = Loader.builder(dataset)
                .transform(SMALL)
                .batchSize(4)
                .workers(2)
                .slots(3)
                .shuffle(shuffle)
                .seed(9)
                .shuffleWindow(window)
                .build()) {
            for (Batch b : loader) {
                try (b) {
                    long bytes = b.pixels().byteSize() / b.size();
                    for (int i = 0; i < b.size(); i++) {
                        CRC32 crc = new CRC32();
                        crc.update(b.pixels().asSlice(i * bytes, bytes).asByteBuffer());
                        long idx = b.indices().getAtIndex(ValueLayout.JAVA_LONG, i);
                        order.add(idx);
                        String was =
                                out.put(idx, b.labels().getAtIndex(ValueLayout.JAVA_INT, i) + ":" + crc.getValue());
                        assertEquals(null, was, "sample " + idx + " delivered twice");
                    }
                }
            }
        }
        return out;
    }

    /**
     * Elastic resume over S3 ({@link ElasticResume}): 4 ranks checkpoint after 3 batches of 50, 2
     * ranks of 100 and 3 of 50 each finish the epoch, every sample once, through a cache of 3
     * shards with the remote default window.
     */
    @Test
    void aRunCheckpointedOnFourRanksOverS3FinishesItsEpochOnTwoAndOnThree() throws IOException {
        int shards = 11;
        int perShard = 61;
        long biggest = 0;
        for (int s = 0; s < shards; s++) {
            Path file = local.resolveSibling("elastic").resolve("e-" + s + ".tar");
            Files.createDirectories(file.getParent());
            TestTars.labelledShard(file, s, perShard);
            byte[] bytes = Files.readAllBytes(file);
            biggest = Math.max(biggest, bytes.length);
            s3.put(BUCKET, "elastic/e-" + s + ".tar", bytes);
        }
        try (ShardDataset far = RemoteDatasets.open("s3://data/elastic/e-{0..10}.tar", fast(), 3 * biggest, null)) {
            assertEquals(shards * perShard, far.size());
            ElasticResume.check(
                    () -> Loader.builder(far)
                            .transform(SMALL)
                            .workers(2)
                            .slots(3)
                            .shuffle(true)
                            .seed(5)
                            .shuffleWindow(2),
                    0);
        }
    }

    @Test
    void remoteShardsGiveTheLocalSamplesThroughASmallCacheEachOnce() {
        String localPattern = local + "/train-{0..4}.tar";
        try (Dataset near = Datasets.openLocal(localPattern);
                ShardDataset far = RemoteDatasets.open("s3://data/train/train-{0..4}.tar", fast(), 2 * largest, null)) {
            assertEquals(SHARDS * PER_SHARD, far.size());
            assertEquals("s3://data/train/train-3.tar/k/3-2", far.name(3 * PER_SHARD + 2));
            for (int i = 0; i < far.size(); i++) {
                assertEquals(near.label(i), far.label(i));
            }
            List<Long> nearOrder = new ArrayList<>();
            List<Long> farOrder = new ArrayList<>();
            assertEquals(epoch(near, false, 0, nearOrder), epoch(far, false, 0, farOrder));
            assertEquals(nearOrder, farOrder);
            // Window-shuffled through a cache of two shards: every sample once, the local order.
            nearOrder.clear();
            farOrder.clear();
            Map<Long, String> shuffled = epoch(far, true, 2, farOrder);
            assertEquals(epoch(near, true, 2, nearOrder), shuffled);
            assertEquals(nearOrder, farOrder);
            assertEquals(SHARDS * PER_SHARD, shuffled.size());
        }
    }

    /** A shard of PNG, WebP and JPEG members, each told by its bytes, gives over S3 what it gives locally. */
    @Test
    void pngAndWebpMembersOverS3GiveTheLocalPixels() throws Exception {
        String why = StokeImage.unavailableReason();
        if (why != null) {
            System.err.println("[stoke] SKIPPING PNG and WebP over S3: " + why);
        }
        Assumptions.assumeTrue(why == null, why);
        Path file = local.resolve("mixed-0.tar");
        BufferedImage picture = new BufferedImage(61, 45, BufferedImage.TYPE_INT_RGB);
        for (int y = 0; y < 45; y++) {
            for (int x = 0; x < 61; x++) {
                picture.setRGB(x, y, (x * 4) << 16 | (y * 5) << 8 | (x * y) & 0xFF);
            }
        }
        ByteArrayOutputStream png = new ByteArrayOutputStream();
        ImageIO.write(picture, "png", png);
        byte[] webp;
        try (var in = RemoteShardsTest.class.getResourceAsStream("/io/stoke/loader/decode/photo-lossy.webp")) {
            webp = in.readAllBytes();
        }
        try (var os = Files.newOutputStream(file);
                var tar = new TarArchiveOutputStream(os)) {
            TestTars.member(tar, "m/0.png", png.toByteArray());
            TestTars.member(tar, "m/0.cls", "1".getBytes(StandardCharsets.US_ASCII));
            TestTars.member(tar, "m/1.webp", webp);
            TestTars.member(tar, "m/1.cls", "2".getBytes(StandardCharsets.US_ASCII));
            TestTars.member(tar, "m/2.jpg", png.toByteArray()); // a PNG named .jpg
            TestTars.member(tar, "m/2.cls", "3".getBytes(StandardCharsets.US_ASCII));
        }
        s3.put(BUCKET, "mixed/mixed-0.tar", Files.readAllBytes(file));
        try (Dataset near = Datasets.openLocal(file.toString());
                ShardDataset far =
                        RemoteDatasets.open("s3://data/mixed/mixed-0.tar", fast(), 4 * Files.size(file), null)) {
            List<Long> order = new ArrayList<>();
            Map<Long, String> got = epoch(far, false, 0, order);
            assertEquals(epoch(near, false, 0, new ArrayList<>()), got);
            assertEquals(3, got.size(), "the PNG, the WebP and the PNG named .jpg all decode");
        }
    }

    @Test
    void theBuildersShuffleWindowIsEightShardsOverRemoteShardsAndGlobalOverLocalOnes() {
        // Java, the command line and Python agree: a Loader.Builder that is not told a window
        // never asks a remote store for every shard at once.
        try (Dataset near = Datasets.openLocal(local + "/train-{0..4}.tar");
                ShardDataset far = RemoteDatasets.open("s3://data/train/train-{0..4}.tar", fast(), 2 * largest, null)) {
            assertEquals(Datasets.DEFAULT_REMOTE_WINDOW, Loader.builder(far).shuffleWindow());
            assertEquals(0, Loader.builder(near).shuffleWindow());
            assertEquals(0, Loader.builder(far).shuffleWindow(0).shuffleWindow());
            int[] byDefault =
                    Loader.builder(far).shuffle(true).seed(3).sampler().order(1);
            assertEquals(
                    java.util.Arrays.toString(Loader.builder(far)
                            .shuffle(true)
                            .seed(3)
                            .shuffleWindow(Datasets.DEFAULT_REMOTE_WINDOW)
                            .sampler()
                            .order(1)),
                    java.util.Arrays.toString(byDefault));
            Assertions.assertNotEquals(
                    java.util.Arrays.toString(Loader.builder(far)
                            .shuffle(true)
                            .seed(3)
                            .shuffleWindow(1)
                            .sampler()
                            .order(1)),
                    java.util.Arrays.toString(byDefault));
        }
    }

    @Test
    void manyWorkersOverTheSmallestCacheAndAGlobalShuffleStillFinishEveryEpoch() {
        // Each batch wants samples of every shard, the cache holds two: shards are fetched over and
        // over, but no worker can wait on another (a worker holds a shard only while it decodes).
        try (ShardDataset far = RemoteDatasets.open("s3://data/train/train-{0..4}.tar", fast(), 2 * largest, null)) {
            Assertions.assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                try (Loader loader = Loader.builder(far)
                        .transform(SMALL)
                        .batchSize(5)
                        .workers(6)
                        .slots(2)
                        .shuffle(true)
                        .seed(1)
                        .epochs(2)
                        .build()) {
                    int seen = 0;
                    for (Batch b : loader) {
                        try (b) {
                            seen += b.size();
                        }
                    }
                    assertEquals(2 * SHARDS * PER_SHARD, seen);
                }
            });
            assertTrue(
                    ((RemoteShards) far.shards().bytes()).fetches() > SHARDS, "the cache was too small to keep them");
        }
    }

    @Test
    void aCacheThatHoldsEveryShardFetchesEachOnceAndAFolderCacheWorksToo(@TempDir Path cacheDir) throws IOException {
        try (ShardDataset far = RemoteDatasets.open("s3://data/train/", fast(), 100 * largest, cacheDir)) {
            assertEquals(SHARDS * PER_SHARD, far.size()); // the listing: the .tar objects under the prefix only
            epoch(far, true, 0, new ArrayList<>());
            epoch(far, true, 0, new ArrayList<>());
            RemoteShards cache = (RemoteShards) far.shards().bytes();
            assertEquals(SHARDS, cache.fetches(), "each shard fetched once: by the scan, then kept");
            try (var files = Files.list(cacheDir)) {
                assertEquals(
                        SHARDS,
                        files.filter(f -> f.toString().endsWith(ShardFolder.SHARD))
                                .count());
            }
        }
        try (var files = Files.list(cacheDir)) {
            assertEquals(List.of(), files.toList(), "the cache's files go with it");
        }
    }

    /**
     * The shards under {@code prefix}, with an index.json beside them: shard 2's entry
     * {@code sizeError} bytes off, and with {@code etag} as its ETag when not null.
     */
    static void putCatalogued(String prefix, long sizeError, String etag) throws IOException {
        List<ShardCatalog.Entry> entries = new ArrayList<>();
        for (int s = 0; s < SHARDS; s++) {
            byte[] bytes = Files.readAllBytes(local.resolve("train-" + s + ".tar"));
            s3.put(BUCKET, prefix + "train-" + s + ".tar", bytes);
            entries.add(new ShardCatalog.Entry(
                    "train-" + s + ".tar", PER_SHARD, bytes.length + (s == 2 ? sizeError : 0), s == 2 ? etag : null));
        }
        ByteArrayOutputStream json = new ByteArrayOutputStream();
        new ShardCatalog(entries, true).write(json, "test");
        s3.put(BUCKET, prefix + ShardCatalog.FILE, json.toByteArray());
    }

    @Test
    void aCatalogOpensRemoteShardsWithoutFetchingOneAndTheFirstBatchWaitsForItsOwnShardsOnly() throws IOException {
        putCatalogued("indexed/", 0, null);
        Map<Long, String> want;
        try (Dataset near = Datasets.openLocal(local + "/train-{0..4}.tar")) {
            want = epoch(near, false, 0, new ArrayList<>());
        }
        try (ShardDataset far = (ShardDataset)
                Datasets.openLocalOrUrl("s3://data/indexed/", new UrlDatasetProvider.ShardCache(100 * largest, null))) {
            RemoteShards cache = (RemoteShards) far.shards().bytes();
            assertTrue(far.shards().catalogued());
            assertEquals(SHARDS * PER_SHARD, far.size());
            assertEquals(0, cache.fetches(), "opening from the catalog fetches no shard");
            try (Loader loader = Loader.builder(far)
                    .transform(SMALL)
                    .batchSize(4)
                    .workers(1)
                    .slots(1)
                    .build()) {
                try (Batch first = loader.next()) {
                    assertEquals(4, first.size());
                }
                assertTrue(cache.fetches() <= 2, "the first batch fetched " + cache.fetches() + " shards");
            }
            assertEquals(want, epoch(far, false, 0, new ArrayList<>()));
        }
        // The folder named without its last '/', as `stoke catalog` takes it: from the catalog too, not
        // a scan whose note says to write the catalog that is there.
        try (ShardDataset far = (ShardDataset)
                Datasets.openLocalOrUrl("s3://data/indexed", new UrlDatasetProvider.ShardCache(100 * largest, null))) {
            assertTrue(far.shards().catalogued());
            assertEquals(
                    0, ((RemoteShards) far.shards().bytes()).fetches(), "opening from the catalog fetches no shard");
            assertEquals(want, epoch(far, false, 0, new ArrayList<>()));
        }
        // Without the catalog, opening says that it fetched every shard, and names stoke catalog.
        List<String> notes = new ArrayList<>();
        try (Dataset scanned = Datasets.checked(
                RemoteDatasets.open("s3://data/train/", fast(), 100 * largest, null),
                "s3://data/train/",
                ErrorPolicy.FAIL,
                notes::add)) {
            assertEquals(SHARDS * PER_SHARD, scanned.size());
        }
        assertTrue(
                notes.size() == 1
                        && notes.get(0).contains("fetched all 5 shards")
                        && notes.get(0)
                                .contains("`stoke catalog 's3://data/train/'` writes their shard catalog"
                                        + " index.json, and opening then reads only that"),
                notes.toString());
        // Over HTTP, which Stoke does not write to, the command it names writes the catalog here.
        notes.clear();
        try (ShardServer web = new ShardServer(ShardServer.Versions.ETAG)) {
            for (int s = 0; s < SHARDS; s++) {
                web.put("/train-" + s + ".tar", Files.readAllBytes(local.resolve("train-" + s + ".tar")));
            }
            String spec = web.url("/train-{0..4}.tar");
            try (Dataset scanned = Datasets.checked(
                    RemoteDatasets.open(spec, fast(), 100 * largest, null), spec, ErrorPolicy.FAIL, notes::add)) {
                assertEquals(SHARDS * PER_SHARD, scanned.size());
            }
            assertTrue(
                    notes.size() == 1
                            && notes.get(0)
                                    .contains("`stoke catalog '" + spec + "' --out index.json` writes their"
                                            + " shard catalog here; served beside them, opening then reads only that"),
                    notes.toString());
        }
    }

    @Test
    void aShardOfAnotherSizeThanTheCatalogSaysIsNamedWhenFetchedAndNeverRead() throws IOException {
        putCatalogued("stale/", 10, null);
        try (ShardDataset far = (ShardDataset)
                Datasets.openLocalOrUrl("s3://data/stale/", new UrlDatasetProvider.ShardCache(100 * largest, null))) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> epoch(far, false, 0, new ArrayList<>()));
            String all = e.toString() + (e.getCause() != null ? " " + e.getCause() : "");
            assertTrue(
                    all.contains("stale/train-2.tar")
                            && all.contains("the shard catalog s3://data/stale/index.json says")
                            && all.contains("stoke catalog"),
                    all);
        }
    }

    @Test
    void aShardRemovedSinceTheCatalogIsNamedAsAStaleCatalogWhenFetched() throws IOException {
        putCatalogued("removed/", 0, null);
        try (S3ObjectStore store = new S3ObjectStore(fast(), s3.endpoint())) {
            store.delete("s3://data/removed/train-2.tar");
        }
        try (ShardDataset far = (ShardDataset)
                Datasets.openLocalOrUrl("s3://data/removed/", new UrlDatasetProvider.ShardCache(100 * largest, null))) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> epoch(far, false, 0, new ArrayList<>()));
            String all = e.toString() + (e.getCause() != null ? " " + e.getCause() : "");
            assertTrue(
                    all.contains("removed/train-2.tar: the shard catalog s3://data/removed/index.json lists it, but the"
                                    + " store has no such object")
                            && all.contains("run `stoke catalog` on the shards again")
                            && all.contains("not found (HTTP 404"),
                    all);
        }
    }

    @Test
    void aShardOfAnotherVersionThanTheCatalogSaysIsNamedWhenFetchedAndTheScanPinsVersions() throws IOException {
        String real;
        try (ShardDataset scanned = RemoteDatasets.openScanned("s3://data/train/", fast(), 100 * largest, null)) {
            // The scan fetched every shard: each one's ETag is known from then on, and checked on a refetch.
            real = scanned.shards().bytes().etag(2);
            assertTrue(real != null && !real.isEmpty(), "s3proxy names versions: " + real);
        }
        putCatalogued("version/", 0, "\"0123456789abcdef0123456789abcdef\"");
        try (ShardDataset far = (ShardDataset)
                Datasets.openLocalOrUrl("s3://data/version/", new UrlDatasetProvider.ShardCache(100 * largest, null))) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> epoch(far, false, 0, new ArrayList<>()));
            String all = e.toString() + (e.getCause() != null ? " " + e.getCause() : "");
            assertTrue(
                    all.contains("version/train-2.tar")
                            && all.contains("says ETag \"0123456789abcdef0123456789abcdef\", the store has " + real)
                            && all.contains("stoke catalog"),
                    all);
        }
    }

    @Test
    void stokeCatalogWritesTheCatalogBesideRemoteShardsAndOpeningThenFetchesNone() throws IOException {
        for (int s = 0; s < SHARDS; s++) {
            s3.put(BUCKET, "self/train-" + s + ".tar", Files.readAllBytes(local.resolve("train-" + s + ".tar")));
        }
        String url = RemoteDatasets.writeCatalog("s3://data/self/train-{0..4}.tar", fast(), 100 * largest);
        assertEquals("s3://data/self/index.json", url);
        Map<Long, String> want;
        try (Dataset near = Datasets.openLocal(local + "/train-{0..4}.tar")) {
            want = epoch(near, false, 0, new ArrayList<>());
        }
        try (ShardDataset far = (ShardDataset)
                Datasets.openLocalOrUrl("s3://data/self/", new UrlDatasetProvider.ShardCache(100 * largest, null))) {
            assertTrue(far.shards().catalogued());
            assertEquals("s3://data/self/train-3.tar", far.shards().shardName(3));
            assertNotNull(far.shards().bytes().etag(3), "the catalog carries the version each shard was read at");
            assertEquals(0, ((RemoteShards) far.shards().bytes()).fetches());
            assertEquals(want, epoch(far, false, 0, new ArrayList<>()));
        }
    }

    @Test
    void stokeCatalogOnAFolderOfParquetFilesIsHandedOnWithTheFolder() {
        // As open() hands such a folder to the Parquet reader, `stoke catalog` hands it to the Parquet
        // catalog's writer (ParquetDatasets.writeCatalog, RemoteParquetTest), with or without its '/'.
        s3.put(BUCKET, "tables/train-0.parquet", new byte[] {'P', 'A', 'R', '1'});
        for (String spec : List.of("s3://data/tables/", "s3://data/tables")) {
            RemoteDatasets.HoldsParquet e = assertThrows(
                    RemoteDatasets.HoldsParquet.class, () -> RemoteDatasets.writeCatalog(spec, fast(), 100 * largest));
            assertEquals("s3://data/tables/", e.prefix(), spec);
        }
    }

    @Test
    void theLoaderFindsThisModuleByTheUrlsScheme() {
        // What the CLI and stoke.DataLoader call: the core's Datasets, which knows no store, finds
        // RemoteDatasets through META-INF/services.
        try (ShardDataset far = (ShardDataset) Datasets.openLocalOrUrl(
                "s3://data/train/train-{0..4}.tar", new UrlDatasetProvider.ShardCache(2 * largest, null))) {
            assertEquals(SHARDS * PER_SHARD, far.size());
            assertTrue(far.shards().remote());
            epoch(far, true, 0, new ArrayList<>());
        }
    }

    @Test
    void aTooSmallCacheIsRefusedWithWhatItNeeds() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> RemoteDatasets.open("s3://data/train/train-{0..4}.tar", fast(), largest, null));
        assertTrue(
                e.getMessage().contains("--shard-cache") && e.getMessage().contains(Long.toString(2 * largest)),
                e.getMessage());
    }

    @Test
    void aMissingShardIsNamedAtOnce() {
        long start = System.nanoTime();
        ShardFetchException e = assertThrows(
                ShardFetchException.class,
                () -> RemoteDatasets.open("s3://data/train/train-{0..5}.tar", fast(), 10 * largest, null));
        assertTrue(
                e.getMessage().contains("s3://data/train/train-5.tar")
                        && e.getMessage().contains("not found"),
                e.getMessage());
        assertTrue(System.nanoTime() - start < 5_000_000_000L, "took " + (System.nanoTime() - start) / 1e9 + " s");
    }

    @Test
    void a503BurstAndConnectionsDroppedMidShardAreRetriedWithNothingLostOrRepeated() throws Exception {
        Map<Long, String> expected;
        try (Dataset near = Datasets.openLocal(local + "/train-{0..4}.tar")) {
            expected = epoch(near, true, 2, new ArrayList<>());
        }
        for (boolean drop : new boolean[] {false, true}) {
            try (FaultProxy proxy = new FaultProxy(s3.port())) {
                if (drop) {
                    proxy.dropFirstGetOfEachRange();
                } else {
                    proxy.unavailableFor(4);
                }
                System.setProperty(
                        S3ObjectStore.ENDPOINT_PROPERTY, proxy.endpoint().toString());
                try (ShardDataset far =
                        RemoteDatasets.open("s3://data/train/train-{0..4}.tar", fast(), 2 * largest, null)) {
                    assertEquals(
                            expected, epoch(far, true, 2, new ArrayList<>()), drop ? "dropped connections" : "503s");
                }
                assertTrue(
                        proxy.seen().size() > SHARDS,
                        "the proxy saw the requests: " + proxy.seen().size());
            } finally {
                System.setProperty(
                        S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
            }
        }
    }

    @Test
    void aServerThatIsDownIsNamedWithinSeconds() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, "http://127.0.0.1:" + port);
        try {
            long start = System.nanoTime();
            ShardFetchException e = assertThrows(
                    ShardFetchException.class,
                    () -> RemoteDatasets.open("s3://data/train/train-0.tar", fast(), 10 * largest, null));
            assertTrue(e.getMessage().contains("s3://data/train/train-0.tar"), e.getMessage());
            assertTrue(System.nanoTime() - start < 10_000_000_000L, "took " + (System.nanoTime() - start) / 1e9 + " s");
        } finally {
            System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
        }
    }
}
