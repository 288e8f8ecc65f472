package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.testing.TestTars;
import io.stoke.remote.FaultProxy.Seen;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;

/**
 * {@link S3ObjectStore} against an S3-compatible server that refuses the checksum headers of AWS
 * SDK 2.30+ (s3proxy 2.1.0, in its own process: a GET with {@code x-amz-checksum-crc32} or
 * {@code x-amz-te} gets 501 NotImplemented, as from older MinIO and Ceph) and against the current s3proxy, which takes them.
 * With Stoke's defaults both serve HEAD, ranged GETs, lists and the loader; with the SDK's
 * default (when_supported) forced, the old one's refusal is named at once, with what to set.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class S3CompatibilityTest {
    static final int PART = 1 << 20;
    static final String BUCKET = "shards";
    static final String SMALL = "train/shard-000000.tar"; // one GET
    static final String LARGE = "train/sub/shard-000002.tar"; // 3 parts and a bit: 4 ranged GETs
    static final int SHARDS = 3;
    static final int PER_SHARD = 5;

    static TestS3Server.TestAwsProperties properties;
    static TestS3Server old;
    static TestS3Server current;
    static Path local;
    static long largest;

    @BeforeAll
    static void start(@TempDir Path home) throws Exception {
        properties = new TestS3Server.TestAwsProperties(home);
        local = Files.createDirectories(home.resolve("shards"));
        for (int s = 0; s < SHARDS; s++) {
            Path file = local.resolve("train-" + s + ".tar");
            largest = Math.max(largest, TestTars.labelledShard(file, s, PER_SHARD));
        }
        old = TestS3Server.oldRelease(home.resolve("old-s3proxy"));
        current = new TestS3Server();
        for (TestS3Server s3 : List.of(old, current)) {
            s3.createBucket(BUCKET, false);
            s3.put(BUCKET, SMALL, 1000, false);
            s3.put(BUCKET, LARGE, 3 * PART + 12_345, false);
            for (int s = 0; s < SHARDS; s++) {
                s3.put(BUCKET, "data/train-" + s + ".tar", Files.readAllBytes(local.resolve("train-" + s + ".tar")));
            }
        }
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable c : new AutoCloseable[] {old, current, properties}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    static TestS3Server server(String name) {
        return switch (name) {
            case "old" -> old;
            case "current" -> current;
            default -> throw new IllegalArgumentException(name);
        };
    }

    static RemoteOptions options() {
        return new RemoteOptions(4, PART, 5, Duration.ofSeconds(15), Duration.ofSeconds(2));
    }

    static String url(String key) {
        return "s3://" + BUCKET + "/" + key;
    }

    static byte[] read(ObjectStore store, String url) {
        return S3ObjectStoreTest.read(store, url);
    }

    /** Forces the SDK's own default, as a user's AWS settings would, for the length of {@code body}. */
    static void withChecksumsWhenSupported(Runnable body) {
        withWhenSupported(List.of("aws.requestChecksumCalculation", "aws.responseChecksumValidation"), body);
    }

    /** Sets the system properties {@code names} to when_supported for the length of {@code body}. */
    static void withWhenSupported(List<String> names, Runnable body) {
        names.forEach(name -> System.setProperty(name, "when_supported"));
        try {
            body.run();
        } finally {
            System.clearProperty("aws.requestChecksumCalculation");
            System.clearProperty("aws.responseChecksumValidation");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"old", "current"})
    void withDefaultSettingsHeadRangedGetsAndListWork(String name) {
        TestS3Server s3 = server(name);
        try (S3ObjectStore store = new S3ObjectStore(options(), s3.endpoint())) {
            assertEquals(
                    RequestChecksumCalculation.WHEN_REQUIRED, store.checksums().request());
            assertEquals(
                    ResponseChecksumValidation.WHEN_REQUIRED, store.checksums().response());
            for (String key : List.of(SMALL, LARGE)) {
                byte[] expected = s3.bytes(BUCKET, key);
                assertEquals(expected.length, store.size(url(key)), key);
                assertEquals(TestS3Server.sha256(expected), TestS3Server.sha256(read(store, url(key))), key);
            }
            assertEquals(List.of(url(SMALL), url(LARGE)), store.list("s3://" + BUCKET + "/train/", ".tar"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"old", "current"})
    void withDefaultSettingsTheLoaderGivesTheLocalSamples(String name) {
        System.setProperty(
                S3ObjectStore.ENDPOINT_PROPERTY, server(name).endpoint().toString());
        try (Dataset near = Datasets.openLocal(local + "/train-{0..2}.tar");
                ShardDataset far = RemoteDatasets.open(
                        "s3://" + BUCKET + "/data/train-{0..2}.tar",
                        new RemoteOptions(4, 64 * 1024, 5, Duration.ofSeconds(15), Duration.ofSeconds(2)),
                        2 * largest,
                        null)) {
            assertEquals(SHARDS * PER_SHARD, far.size());
            List<Long> nearOrder = new ArrayList<>();
            List<Long> farOrder = new ArrayList<>();
            assertEquals(
                    RemoteShardsTest.epoch(near, false, 0, nearOrder), RemoteShardsTest.epoch(far, false, 0, farOrder));
            assertEquals(nearOrder, farOrder);
        } finally {
            System.clearProperty(S3ObjectStore.ENDPOINT_PROPERTY);
        }
    }

    /**
     * Either setting alone is enough for the old server to refuse a GET: request checksums put
     * {@code x-amz-checksum-crc32} (of the empty body) on it, response validation {@code x-amz-te: append-md5}.
     */
    @ParameterizedTest
    @ValueSource(
            strings = {"aws.requestChecksumCalculation=x-amz-checksum-crc32", "aws.responseChecksumValidation=x-amz-te"
            })
    void withChecksumsWhenSupportedTheOldServersRefusalFailsAtOnceNamingWhatToSet(String settingAndHeader)
            throws Exception {
        String setting = settingAndHeader.substring(0, settingAndHeader.indexOf('='));
        String header = settingAndHeader.substring(setting.length() + 1);
        try (FaultProxy proxy = new FaultProxy(old.port())) {
            withWhenSupported(List.of(setting), () -> {
                try (S3ObjectStore store = new S3ObjectStore(options(), proxy.endpoint())) {
                    // HEAD carries no checksum header: the old server answers it.
                    assertEquals(1000, store.size(url(SMALL)));
                    try (Arena arena = Arena.ofShared()) {
                        MemorySegment dst = arena.allocate(1000);
                        // "At once": one GET reached the server (counted below), not a retry's five.
                        ShardFetchException e =
                                assertThrows(ShardFetchException.class, () -> store.read(url(SMALL), dst));
                        String m = e.getMessage();
                        assertEquals(url(SMALL), e.url());
                        assertTrue(m.startsWith(url(SMALL) + ": "), m);
                        assertTrue(m.contains("HTTP 501 NotImplemented") && m.contains("not implemented"), m);
                        assertTrue(m.contains("the request carried " + header), m);
                        assertTrue(
                                m.contains("AWS_REQUEST_CHECKSUM_CALCULATION=when_required")
                                        && m.contains("AWS_RESPONSE_CHECKSUM_VALIDATION=when_required")
                                        && m.contains("when_supported (system property " + setting + ")"),
                                m);
                        assertTrue(!m.contains("gave up"), m);
                    }
                }
            });
            List<Seen> gets =
                    proxy.seen().stream().filter(s -> s.method().equals("GET")).toList();
            assertEquals(1, gets.size(), "one attempt, not five: " + proxy.seen());
        }
    }

    /**
     * The old release has no conditional writes: it takes {@code If-None-Match: *} on a PUT and
     * replaces the object (what spark-embed's probe detects and says), where the current one
     * refuses the second create.
     */
    @Test
    void conditionalCreateIsHonouredByTheCurrentServerAndIgnoredByTheOld() {
        try (S3ObjectStore store = new S3ObjectStore(options(), current.endpoint())) {
            String url = "s3://" + BUCKET + "/markers/m.json";
            assertTrue(store.create(url, new byte[] {1}));
            assertFalse(store.create(url, new byte[] {2, 2}));
            assertEquals(1, store.size(url));
        }
        try (S3ObjectStore store = new S3ObjectStore(options(), old.endpoint())) {
            String url = "s3://" + BUCKET + "/markers/m.json";
            assertTrue(store.create(url, new byte[] {1}));
            assertTrue(store.create(url, new byte[] {2, 2}), "the old release honours If-None-Match now");
            assertEquals(2, store.size(url), "the second write replaced the first");
        }
    }

    @Test
    void withChecksumsWhenSupportedTheCurrentServerServesTheReads() {
        withChecksumsWhenSupported(() -> {
            try (S3ObjectStore store = new S3ObjectStore(options(), current.endpoint())) {
                assertEquals(
                        ResponseChecksumValidation.WHEN_SUPPORTED,
                        store.checksums().response());
                assertEquals(
                        TestS3Server.sha256(current.bytes(BUCKET, LARGE)),
                        TestS3Server.sha256(read(store, url(LARGE))));
            }
        });
    }
}
