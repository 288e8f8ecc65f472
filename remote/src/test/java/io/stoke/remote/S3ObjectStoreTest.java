package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.remote.FaultProxy.Action;
import io.stoke.remote.FaultProxy.Seen;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link S3ObjectStore} against a real S3 server (s3proxy, SigV4 and all) on this machine, and
 * through {@link FaultProxy} for 503s and dropped connections. Credentials and region come
 * through the SDK's standard chain, from its system properties (not the environment, which the
 * tests leave alone); instance metadata is switched off so that nothing leaves the machine.
 */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class S3ObjectStoreTest {
    static final int PART = 1 << 20;
    static final String BUCKET = "shards";
    static final String SMALL = "train/shard-000000.tar"; // under one part
    static final String ONE_PART = "train/shard-000001.tar"; // exactly one part
    static final String LARGE = "train/sub/shard-000002.tar"; // 3 parts and a bit: 4 GETs
    static final String EMPTY = "train/empty.tar";

    static TestS3Server.TestAwsProperties properties;

    static TestS3Server s3;

    @BeforeAll
    static void start(@TempDir Path home) throws Exception {
        properties = new TestS3Server.TestAwsProperties(home);
        s3 = new TestS3Server();
        s3.createBucket(BUCKET, false);
        s3.put(BUCKET, SMALL, 1000, false);
        s3.put(BUCKET, ONE_PART, PART, false);
        s3.put(BUCKET, LARGE, 3 * PART + 12_345, false);
        s3.put(BUCKET, EMPTY, 0, false);
        s3.put(BUCKET, "train/README.txt", 10, false); // not a .tar
        s3.put(BUCKET, "train-extra/shard-000009.tar", 10, false); // beside the prefix, not under it
        s3.put(BUCKET, "val/shard-000000.tar", 10, false);
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

    static RemoteOptions options(int attempts, Duration deadline) {
        return new RemoteOptions(4, PART, attempts, deadline, Duration.ofSeconds(2));
    }

    static String url(String key) {
        return "s3://" + BUCKET + "/" + key;
    }

    /** Reads the object into a fresh segment and returns its bytes. */
    static byte[] read(ObjectStore store, String url) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment dst = arena.allocate(store.size(url));
            store.read(url, dst);
            return dst.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Test
    void sizeAndReadGiveTheUploadedBytesBelowAtAndAbovePartSize() {
        try (S3ObjectStore store = new S3ObjectStore(options(5, Duration.ofSeconds(8)), s3.endpoint())) {
            for (String key : List.of(SMALL, ONE_PART, LARGE, EMPTY)) {
                byte[] expected = s3.bytes(BUCKET, key);
                assertEquals(expected.length, store.size(url(key)), key);
                byte[] got = read(store, url(key));
                assertEquals(TestS3Server.sha256(expected), TestS3Server.sha256(got), key);
            }
        }
    }

    @Test
    void forUrlTakesTheEndpointFromTheSystemPropertyWithPathStyleAndDefaultOptions() {
        System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
        try (ObjectStore store = ObjectStore.forUrl(url(LARGE), RemoteOptions.defaults())) {
            assertTrue(store instanceof S3ObjectStore);
            assertEquals(s3.endpoint(), ((S3ObjectStore) store).endpoint());
            assertEquals("us-east-1", ((S3ObjectStore) store).region().id());
            // Path style: with virtual hosts the SDK would ask for shards.127.0.0.1, which does not resolve.
            assertEquals(TestS3Server.sha256(s3.bytes(BUCKET, LARGE)), TestS3Server.sha256(read(store, url(LARGE))));
        } finally {
            System.clearProperty(S3ObjectStore.ENDPOINT_PROPERTY);
        }
    }

    @Test
    void endpointPrecedenceIsPropertyThenServiceVariableThenGeneralVariable() {
        Map<String, String> env = new HashMap<>();
        Map<String, String> props = new HashMap<>();
        assertNull(S3ObjectStore.customEndpoint(props::get, env::get));
        env.put("AWS_ENDPOINT_URL", "http://general:9000");
        assertEquals(URI.create("http://general:9000"), S3ObjectStore.customEndpoint(props::get, env::get));
        env.put("AWS_ENDPOINT_URL_S3", "https://s3only:9000");
        assertEquals(URI.create("https://s3only:9000"), S3ObjectStore.customEndpoint(props::get, env::get));
        props.put(S3ObjectStore.ENDPOINT_PROPERTY, "http://127.0.0.1:1234");
        assertEquals(URI.create("http://127.0.0.1:1234"), S3ObjectStore.customEndpoint(props::get, env::get));
        props.put(S3ObjectStore.ENDPOINT_PROPERTY, "minio:9000");
        IllegalArgumentException bad =
                assertThrows(IllegalArgumentException.class, () -> S3ObjectStore.customEndpoint(props::get, env::get));
        assertTrue(
                bad.getMessage().contains(S3ObjectStore.ENDPOINT_PROPERTY)
                        && bad.getMessage().contains("minio:9000"),
                bad.getMessage());
    }

    @Test
    void createWritesOnlyWhereNothingIsAndExactlyOneOfManyRacersWins() throws Exception {
        try (S3ObjectStore store = new S3ObjectStore(options(5, Duration.ofSeconds(8)), s3.endpoint())) {
            String url = "s3://" + BUCKET + "/markers/one.json";
            assertTrue(store.create(url, new byte[] {1}));
            assertFalse(store.create(url, new byte[] {2}), "a second create over an object");
            assertEquals(1, store.size(url), "the first writer's object stands");
            store.delete(url);
            store.delete(url); // a missing object is no error
            assertEquals(List.of(), store.list("s3://" + BUCKET + "/markers/", ""));
            // Eight writers race for one marker: one wins, whichever.
            String raced = "s3://" + BUCKET + "/markers/raced.json";
            List<Future<Boolean>> racers = new ArrayList<>();
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                for (int i = 0; i < 8; i++) {
                    byte[] body = {(byte) i};
                    racers.add(pool.submit(() -> store.create(raced, body)));
                }
                int won = 0;
                for (Future<Boolean> f : racers) {
                    won += f.get() ? 1 : 0;
                }
                assertEquals(1, won);
            } finally {
                pool.shutdownNow();
                store.delete(raced);
            }
        }
    }

    /**
     * Over plain HTTP the SDK's default frames an upload's body as {@code aws-chunked}, each chunk
     * behind a {@code SIZE;chunk-signature=...} line. A server that does not decode that framing
     * (s3rver, some gateways) stores the frames as the object's bytes: a catalog that no longer
     * parses, a spark-embed table that is not Parquet, and no error anywhere. So every write must
     * carry the object's bytes themselves, signed by their SHA-256, which every server stores as sent.
     */
    @Test
    void writesSendTheObjectsBytesThemselvesNotAwsChunkedFrames() throws Exception {
        byte[] bytes = new byte[200_000]; // several of the SDK's 128 KiB chunks
        new java.util.Random(7).nextBytes(bytes);
        try (FaultProxy proxy = new FaultProxy(s3.port());
                S3ObjectStore store = new S3ObjectStore(options(5, Duration.ofSeconds(8)), proxy.endpoint())) {
            store.write(url("written/table.parquet"), bytes);
            assertTrue(store.create(url("written/_committed/table.json"), new byte[] {'{', '}'}));
            List<FaultProxy.Body> bodies = proxy.bodies();
            assertEquals(2, bodies.size(), bodies.toString());
            byte[][] sent = {bytes, {'{', '}'}};
            for (int i = 0; i < 2; i++) {
                FaultProxy.Body body = bodies.get(i);
                assertEquals("PUT", body.method());
                assertTrue(
                        body.contentEncoding() == null
                                || !body.contentEncoding().contains("aws-chunked"),
                        body.target() + ": Content-Encoding " + body.contentEncoding());
                assertEquals(TestS3Server.sha256(sent[i]), body.contentSha256(), body.target());
                assertEquals(TestS3Server.sha256(sent[i]), TestS3Server.sha256(body.bytes()), body.target());
            }
            assertEquals(TestS3Server.sha256(bytes), TestS3Server.sha256(read(store, url("written/table.parquet"))));
        }
    }

    @Test
    void listGivesTheTarKeysUnderThePrefixSortedAndNothingElse() {
        try (S3ObjectStore store = new S3ObjectStore(options(5, Duration.ofSeconds(8)), s3.endpoint())) {
            assertEquals(
                    List.of(url(EMPTY), url(SMALL), url(ONE_PART), url(LARGE)),
                    store.list("s3://" + BUCKET + "/train/", ".tar"));
            assertEquals(List.of(url("train/README.txt")), store.list("s3://" + BUCKET + "/train/", ".txt"));
            assertEquals(List.of(), store.list("s3://" + BUCKET + "/test/", ".tar"));
            ShardFetchException noBucket =
                    assertThrows(ShardFetchException.class, () -> store.list("s3://no-such-bucket/train/", ".tar"));
            assertTrue(noBucket.getMessage().startsWith("s3://no-such-bucket/train/: "), noBucket.getMessage());
            assertTrue(noBucket.getMessage().contains("not found"), noBucket.getMessage());
        }
    }

    @Test
    void aMissingKeyFailsAtOnceWithNotFoundAndNoRetry() throws Exception {
        try (FaultProxy proxy = new FaultProxy(s3.port());
                S3ObjectStore store = new S3ObjectStore(options(5, Duration.ofSeconds(8)), proxy.endpoint())) {
            String missing = url("train/missing.tar");
            // No retry: the proxy saw exactly one HEAD (below), whatever the time it took.
            ShardFetchException e = assertThrows(ShardFetchException.class, () -> store.size(missing));
            assertEquals(missing, e.url());
            assertTrue(
                    e.getMessage().startsWith(missing + ": ") && e.getMessage().contains("not found"), e.getMessage());
            assertEquals(List.of(new Seen("HEAD", "/shards/train/missing.tar", null, Action.FORWARDED)), proxy.seen());

            try (Arena arena = Arena.ofShared()) {
                MemorySegment dst = arena.allocate(100);
                ShardFetchException r = assertThrows(ShardFetchException.class, () -> store.read(missing, dst));
                assertTrue(
                        r.getMessage().startsWith(missing + ": ")
                                && r.getMessage().contains("not found"),
                        r.getMessage());
            }
            assertEquals(2, proxy.seen().size(), proxy.seen().toString()); // one GET more, not five
        }
    }

    @Test
    void theFirst503sAreRetriedAndTheBytesAreRight() throws Exception {
        try (FaultProxy proxy = new FaultProxy(s3.port()).unavailableFor(3);
                S3ObjectStore store = new S3ObjectStore(options(5, Duration.ofSeconds(8)), proxy.endpoint())) {
            byte[] expected = s3.bytes(BUCKET, LARGE);
            try (Arena arena = Arena.ofShared()) {
                MemorySegment dst = arena.allocate(expected.length);
                store.read(url(LARGE), dst);
                assertEquals(TestS3Server.sha256(expected), TestS3Server.sha256(dst.toArray(ValueLayout.JAVA_BYTE)));
            }
            assertEquals(
                    3, proxy.count(Action.SERVICE_UNAVAILABLE), proxy.seen().toString());
            assertEquals(4, proxy.count(Action.FORWARDED), proxy.seen().toString()); // each of the 4 parts once
            assertEquals(
                    4,
                    proxy.seen().stream()
                            .filter(s -> s.action() == Action.FORWARDED)
                            .map(Seen::range)
                            .distinct()
                            .count());
        }
    }

    @Test
    void aConnectionDroppedMidBodyIsRetriedAndTheBytesAreRight() throws Exception {
        try (FaultProxy proxy = new FaultProxy(s3.port()).dropFirstGetOfEachRange();
                S3ObjectStore store = new S3ObjectStore(options(5, Duration.ofSeconds(8)), proxy.endpoint())) {
            byte[] expected = s3.bytes(BUCKET, LARGE);
            try (Arena arena = Arena.ofShared()) {
                MemorySegment dst = arena.allocate(expected.length);
                store.read(url(LARGE), dst);
                assertEquals(TestS3Server.sha256(expected), TestS3Server.sha256(dst.toArray(ValueLayout.JAVA_BYTE)));
            }
            assertEquals(FaultProxy.EACH_OF_FOUR_PARTS_DROPPED_THEN_FORWARDED, proxy.actionsByRange());
        }
    }

    @Test
    void always503FailsWithinSecondsNamingTheUrlAndTheAttempts() throws Exception {
        try (FaultProxy proxy = new FaultProxy(s3.port()).alwaysUnavailable();
                S3ObjectStore store = new S3ObjectStore(options(3, Duration.ofSeconds(5)), proxy.endpoint())) {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment dst = arena.allocate(1000);
                long start = System.nanoTime();
                ShardFetchException e = assertThrows(ShardFetchException.class, () -> store.read(url(SMALL), dst));
                long millis = (System.nanoTime() - start) / 1_000_000;
                // The attempts are counted below; the bound is the store's 5 s deadline: its three
                // attempts and their backoff must end before it, however loaded the machine.
                assertTrue(millis < 5000, "took " + millis + " ms");
                assertEquals(url(SMALL), e.url());
                assertTrue(e.getMessage().startsWith(url(SMALL) + ": "), e.getMessage());
                assertTrue(
                        e.getMessage().contains("3 attempts") && e.getMessage().contains("HTTP 503"), e.getMessage());
            }
            assertEquals(3, proxy.count(Action.SERVICE_UNAVAILABLE));
            assertEquals(3, proxy.seen().size());
            ShardFetchException head = assertThrows(ShardFetchException.class, () -> store.size(url(SMALL)));
            assertTrue(
                    head.getMessage().contains("HEAD") && head.getMessage().contains("3 attempts"), head.getMessage());
            assertEquals(6, proxy.seen().size());
        }
    }

    @Test
    void aServerThatIsDownFailsWithinSecondsNamingTheUrl() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort(); // closed again: nothing listens there
        }
        try (S3ObjectStore store =
                new S3ObjectStore(options(3, Duration.ofSeconds(5)), URI.create("http://127.0.0.1:" + port))) {
            long start = System.nanoTime();
            ShardFetchException e = assertThrows(ShardFetchException.class, () -> store.size(url(SMALL)));
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(millis < 5000, "3 attempts must end before the 5 s deadline; took " + millis + " ms");
            assertTrue(
                    e.getMessage().startsWith(url(SMALL) + ": ")
                            && e.getMessage().contains("3 attempts"),
                    e.getMessage());
            try (Arena arena = Arena.ofShared()) {
                MemorySegment dst = arena.allocate(5000);
                ShardFetchException r = assertThrows(ShardFetchException.class, () -> store.read(url(SMALL), dst));
                assertTrue(
                        r.getMessage().startsWith(url(SMALL) + ": ")
                                && r.getMessage().contains("3 attempts"),
                        r.getMessage());
            }
        }
    }

    @Test
    void noCredentialsAnywhereIsAnErrorThatSaysWhatToSet() {
        Assumptions.assumeTrue(
                System.getenv("AWS_ACCESS_KEY_ID") == null
                        && System.getenv("AWS_PROFILE") == null
                        && System.getenv("AWS_WEB_IDENTITY_TOKEN_FILE") == null
                        && System.getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI") == null
                        && System.getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") == null,
                "the environment has AWS credentials");
        System.clearProperty("aws.accessKeyId");
        System.clearProperty("aws.secretAccessKey");
        try {
            IllegalStateException e = assertThrows(
                    IllegalStateException.class,
                    () -> new S3ObjectStore(options(3, Duration.ofSeconds(5)), s3.endpoint()).close());
            assertTrue(
                    e.getMessage().contains("AWS_ACCESS_KEY_ID")
                            && e.getMessage().contains("AWS_SECRET_ACCESS_KEY"),
                    e.getMessage());
        } finally {
            System.setProperty("aws.accessKeyId", TestS3Server.ACCESS_KEY);
            System.setProperty("aws.secretAccessKey", TestS3Server.SECRET_KEY);
        }
    }

    @Test
    void urlsThatAreNotS3AreRejectedWithTheUrl() {
        try (S3ObjectStore store = new S3ObjectStore(options(3, Duration.ofSeconds(5)), s3.endpoint())) {
            assertTrue(assertThrows(IllegalArgumentException.class, () -> store.size("s3://bucket-only"))
                    .getMessage()
                    .contains("s3://bucket-only"));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> store.size("https://x/y.tar"))
                    .getMessage()
                    .contains("https://x/y.tar"));
        }
        assertTrue(assertThrows(
                        IllegalArgumentException.class,
                        () -> ObjectStore.forUrl("gs://b/k.tar", RemoteOptions.defaults()))
                .getMessage()
                .contains("gs://b/k.tar"));
    }
}
