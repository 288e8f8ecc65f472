package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.UrlDatasetProvider;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The restart cache over remote shards: over S3 (s3proxy, started here), each member named by its
 * shard's ETag; over an HTTP server that gives no ETag, by a hash of the member's bytes, so that an
 * object written again under its URL is never served its old copies. Either way the batches are the
 * uncached ones, byte for byte.
 */
class RemoteRestartCacheTest {
    static final int PER_SHARD = 6;
    static final List<TransformSpec> SPECS = List.of(
            TransformSpec.defaults().withResize(40, 32),
            TransformSpec.defaults().withTrain(32, RandomResizedCrop.defaults()));
    static TestS3Server.TestAwsProperties properties;
    static TestS3Server s3;

    @TempDir
    Path tmp;

    private final List<String> said = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void start(@TempDir Path home) throws Exception {
        properties = new TestS3Server.TestAwsProperties(home);
        s3 = new TestS3Server();
        System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
        s3.createBucket("cache", false);
        for (int s = 0; s < 3; s++) {
            Path file = home.resolve("c-" + s + ".tar");
            TestTars.labelledShard(file, s, PER_SHARD);
            s3.put("cache", "c-" + s + ".tar", Files.readAllBytes(file));
        }
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

    @BeforeEach
    void needsTheLibrary() {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
    }

    private static Dataset open(String url) {
        return Datasets.openLocalOrUrl(url, new UrlDatasetProvider.ShardCache(1L << 26, null));
    }

    private RestartCache cache() {
        return RestartCache.open(tmp.resolve("restart"), 1L << 30, said::add);
    }

    /** One epoch's batches: indices, labels and the pixels' checksum, in order. */
    private static List<String> epoch(Dataset d, TransformSpec spec, RestartCache cache) {
        List<String> out = new ArrayList<>();
        try (Loader l = Loader.builder(d)
                .transform(spec)
                .batchSize(4)
                .workers(2)
                .shuffle(true)
                .seed(3)
                .shuffleWindow(0)
                .restartCache(cache)
                .build()) {
            for (Batch b : l) {
                try (b) {
                    CRC32 crc = new CRC32();
                    crc.update(b.pixels().asByteBuffer());
                    out.add(Arrays.toString(b.indices().toArray(ValueLayout.JAVA_LONG))
                            + Arrays.toString(b.labels().toArray(ValueLayout.JAVA_INT)) + " " + crc.getValue());
                }
            }
        }
        return out;
    }

    @Test
    void s3ShardsAreCachedByTheirETagsAndANewProcessReadsEveryCopyOfTheSameVersion() throws Exception {
        String url = "s3://cache/c-{0..2}.tar";
        try (Dataset d = open(url);
                RestartCache cache = cache()) {
            assertEquals(epoch(d, SPECS.get(0), null), epoch(d, SPECS.get(0), cache), "the filling epoch");
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(3 * PER_SHARD, cache.stats().copied(), cache.stats().toString());
        }
        try (Dataset d = open(url);
                RestartCache again = cache()) {
            for (TransformSpec spec : SPECS) {
                assertEquals(epoch(d, spec, null), epoch(d, spec, again), spec.toString());
            }
            assertEquals(0, again.stats().misses(), again.stats().toString());
            assertEquals(2 * 3 * PER_SHARD, again.stats().hits(), again.stats().toString());
        }
        // Shard 0 written again, of the same length and layout: a new ETag, so none of its old copies.
        byte[] was = s3.bytes("cache", "c-0.tar");
        s3.put("cache", "c-0.tar", requantised(was));
        try (Dataset d = open(url);
                RestartCache again = cache()) {
            assertEquals(epoch(d, SPECS.get(1), null), epoch(d, SPECS.get(1), again));
            assertEquals(PER_SHARD, again.stats().misses(), "shard 0's members: " + again.stats());
        } finally {
            s3.put("cache", "c-0.tar", was);
        }
        assertEquals(List.of(), said);
    }

    /** Raises the first JPEG member's first quantisation value by one: the same length, other pixels. */
    private static byte[] requantised(byte[] tar) {
        byte[] out = tar.clone();
        for (int i = 512; i + 5 < out.length; i++) {
            if ((out[i] & 0xFF) == 0xFF && (out[i + 1] & 0xFF) == 0xDB) { // DQT: length, Pq/Tq, then values
                int at = i + 5;
                out[at] = (byte) ((out[at] & 0xFF) < 255 ? (out[at] & 0xFF) + 1 : 254);
                return out;
            }
        }
        throw new AssertionError("no DQT segment");
    }

    @Test
    void anObjectWithoutETagIsNamedByItsMembersBytesAndNeverServedAnOldCopy() throws Exception {
        Path file = tmp.resolve("shard.tar");
        TestTars.labelledShard(file, 4, PER_SHARD);
        byte[] first = Files.readAllBytes(file);
        byte[] second = requantised(first);
        assertEquals(first.length, second.length);
        assertFalse(Arrays.equals(first, second));
        try (HttpObjectStoreTest.RangeServer server = new HttpObjectStoreTest.RangeServer(first, false, false, false)) {
            try (Dataset d = open(server.url());
                    RestartCache cache = cache()) {
                epoch(d, SPECS.get(0), cache);
                assertTrue(cache.awaitFilled(60_000));
                assertEquals(PER_SHARD, cache.stats().copied(), cache.stats().toString());
            }
            // Written again under the same URL, with nothing to tell the versions apart but the bytes.
            server.replace(second);
            try (Dataset d = open(server.url());
                    RestartCache cache = cache()) {
                for (TransformSpec spec : SPECS) {
                    assertEquals(epoch(d, spec, null), epoch(d, spec, cache), spec.toString());
                    assertTrue(cache.awaitFilled(60_000));
                }
                assertEquals(1, cache.stats().misses(), "the changed member only: " + cache.stats());
                assertEquals(1, cache.stats().copied(), cache.stats().toString());
            }
        }
        assertEquals(List.of(), said);
    }
}
