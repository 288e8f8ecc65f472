package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.stoke.remote.FaultProxy.Action;
import io.stoke.remote.FaultProxy.Seen;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link HttpObjectStore} against s3proxy serving public-read objects to anonymous GETs (Jetty's
 * real Range handling), through {@link FaultProxy} for the faults, and against small JDK
 * {@link HttpServer}s for what s3proxy never does: refuse HEAD, ignore Range, stall mid-body.
 */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class HttpObjectStoreTest {
    static final int PART = 1 << 20;
    static final String BUCKET = "web";
    static final String SMALL = "shard-000000.tar";
    static final String ONE_PART = "shard-000001.tar";
    static final String LARGE = "shard-000002.tar";
    static final String EMPTY = "empty.tar";

    static TestS3Server s3;

    @BeforeAll
    static void start() throws Exception {
        s3 = new TestS3Server();
        s3.createBucket(BUCKET, true);
        s3.put(BUCKET, SMALL, 1000, true);
        s3.put(BUCKET, ONE_PART, PART, true);
        s3.put(BUCKET, LARGE, 3 * PART + 12_345, true);
        s3.put(BUCKET, EMPTY, 0, true);
        s3.createBucket("private", false);
        s3.put("private", SMALL, 1000, false);
    }

    @AfterAll
    static void stop() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    static RemoteOptions options(int attempts, Duration deadline) {
        return new RemoteOptions(4, PART, attempts, deadline, Duration.ofSeconds(2));
    }

    static String url(int port, String key) {
        return "http://127.0.0.1:" + port + "/" + BUCKET + "/" + key;
    }

    static byte[] read(ObjectStore store, String url, long size) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment dst = arena.allocate(size);
            store.read(url, dst);
            return dst.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Test
    void sizeAndReadGiveTheServedBytesBelowAtAndAbovePartSize() {
        try (ObjectStore store = ObjectStore.forUrl(url(s3.port(), SMALL), options(5, Duration.ofSeconds(8)))) {
            assertTrue(store instanceof HttpObjectStore);
            for (String key : List.of(SMALL, ONE_PART, LARGE, EMPTY)) {
                byte[] expected = s3.bytes(BUCKET, key);
                String url = url(s3.port(), key);
                assertEquals(expected.length, store.size(url), key);
                assertEquals(
                        TestS3Server.sha256(expected), TestS3Server.sha256(read(store, url, expected.length)), key);
            }
        }
    }

    @Test
    void aMissingObjectFailsAtOnceWithNotFoundAndNoRetry() throws Exception {
        try (FaultProxy proxy = new FaultProxy(s3.port());
                HttpObjectStore store = new HttpObjectStore(options(5, Duration.ofSeconds(8)))) {
            String missing = url(proxy.port(), "missing.tar");
            // No retry: the proxy saw exactly one HEAD (below), whatever the time it took.
            ShardFetchException e = assertThrows(ShardFetchException.class, () -> store.size(missing));
            assertEquals(missing, e.url());
            assertTrue(
                    e.getMessage().startsWith(missing + ": ") && e.getMessage().contains("not found"), e.getMessage());
            assertEquals(List.of(new Seen("HEAD", "/web/missing.tar", null, Action.FORWARDED)), proxy.seen());
        }
    }

    @Test
    void aPrivateObjectIsAccessDeniedNotRetried() throws Exception {
        try (HttpObjectStore store = new HttpObjectStore(options(5, Duration.ofSeconds(8)))) {
            String url = "http://127.0.0.1:" + s3.port() + "/private/" + SMALL;
            ShardFetchException e = assertThrows(ShardFetchException.class, () -> store.size(url));
            assertTrue(
                    e.getMessage().startsWith(url + ": ") && e.getMessage().contains("access denied"), e.getMessage());
        }
    }

    @Test
    void theFirst503sAreRetriedAndTheBytesAreRight() throws Exception {
        try (FaultProxy proxy = new FaultProxy(s3.port()).unavailableFor(3);
                HttpObjectStore store = new HttpObjectStore(options(5, Duration.ofSeconds(8)))) {
            byte[] expected = s3.bytes(BUCKET, LARGE);
            String url = url(proxy.port(), LARGE);
            assertEquals(TestS3Server.sha256(expected), TestS3Server.sha256(read(store, url, expected.length)));
            assertEquals(
                    3, proxy.count(Action.SERVICE_UNAVAILABLE), proxy.seen().toString());
            assertEquals(4, proxy.count(Action.FORWARDED), proxy.seen().toString());
        }
    }

    @Test
    void aConnectionDroppedMidBodyIsRetriedAndTheBytesAreRight() throws Exception {
        try (FaultProxy proxy = new FaultProxy(s3.port()).dropFirstGetOfEachRange();
                HttpObjectStore store = new HttpObjectStore(options(5, Duration.ofSeconds(8)))) {
            byte[] expected = s3.bytes(BUCKET, LARGE);
            assertEquals(
                    TestS3Server.sha256(expected),
                    TestS3Server.sha256(read(store, url(proxy.port(), LARGE), expected.length)));
            assertEquals(FaultProxy.EACH_OF_FOUR_PARTS_DROPPED_THEN_FORWARDED, proxy.actionsByRange());
        }
    }

    @Test
    void always503FailsWithinSecondsNamingTheUrlAndTheAttempts() throws Exception {
        try (FaultProxy proxy = new FaultProxy(s3.port()).alwaysUnavailable();
                HttpObjectStore store = new HttpObjectStore(options(3, Duration.ofSeconds(5)))) {
            String url = url(proxy.port(), SMALL);
            long start = System.nanoTime();
            ShardFetchException e = assertThrows(ShardFetchException.class, () -> read(store, url, 1000));
            long millis = (System.nanoTime() - start) / 1_000_000;
            // The attempts are counted below; the bound is the store's 5 s deadline: its three attempts
            // and their backoff must end before it, however loaded the machine.
            assertTrue(millis < 5000, "took " + millis + " ms");
            assertEquals(url, e.url());
            assertTrue(
                    e.getMessage().startsWith(url + ": ")
                            && e.getMessage().contains("3 attempts")
                            && e.getMessage().contains("HTTP 503"),
                    e.getMessage());
            assertEquals(3, proxy.count(Action.SERVICE_UNAVAILABLE));
            assertEquals(3, proxy.seen().size());
        }
    }

    @Test
    void aServerThatIsDownFailsWithinSecondsNamingTheUrl() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        try (HttpObjectStore store = new HttpObjectStore(options(3, Duration.ofSeconds(5)))) {
            String url = url(port, SMALL);
            long start = System.nanoTime();
            ShardFetchException e = assertThrows(ShardFetchException.class, () -> store.size(url));
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(millis < 5000, "3 attempts must end before the 5 s deadline; took " + millis + " ms");
            assertTrue(e.getMessage().startsWith(url + ": ") && e.getMessage().contains("3 attempts"), e.getMessage());
            ShardFetchException r = assertThrows(ShardFetchException.class, () -> read(store, url, 1000));
            assertTrue(r.getMessage().startsWith(url + ": ") && r.getMessage().contains("3 attempts"), r.getMessage());
        }
    }

    @Test
    void listIsUnsupportedAndSaysToUseABracePattern() {
        try (HttpObjectStore store = new HttpObjectStore(options(3, Duration.ofSeconds(5)))) {
            UnsupportedOperationException e = assertThrows(
                    UnsupportedOperationException.class, () -> store.list("https://example.invalid/shards/", ".tar"));
            assertTrue(
                    e.getMessage().contains("https://example.invalid/shards/")
                            && e.getMessage().contains("brace pattern")
                            && e.getMessage().contains("index.json for shards, parquet-index.json for Parquet"),
                    e.getMessage());
        }
    }

    @Test
    void aServerThatRefusesHeadIsAskedForByteZero() throws Exception {
        byte[] data = bytes(2 * PART + 7);
        try (RangeServer server = new RangeServer(data, true, false, false);
                HttpObjectStore store = new HttpObjectStore(options(3, Duration.ofSeconds(5)))) {
            assertEquals(data.length, store.size(server.url()));
            assertEquals(List.of("HEAD null", "GET bytes=0-0"), server.requests);
            assertEquals(TestS3Server.sha256(data), TestS3Server.sha256(read(store, server.url(), data.length)));
        }
    }

    /**
     * A server that answers every ranged GET with the whole object (Python's {@code http.server}):
     * an object that one part holds is read as it is; a larger one, refused in parts, is read again
     * by one GET, said once for the server, and later objects from it go by one GET at once. Part
     * of an object (a Parquet footer) cannot be read from it, and is refused naming why.
     */
    @Test
    void aServerThatIgnoresRangeIsReadWholeByOneGetSaidOnceAndPartOfAnObjectIsRefused() throws Exception {
        byte[] data = bytes(2 * PART + 7);
        try (RangeServer server = new RangeServer(data, false, true, false)) {
            try (HttpObjectStore onePart = new HttpObjectStore(
                    new RemoteOptions(4, 4 * PART, 3, Duration.ofSeconds(5), Duration.ofSeconds(2)))) {
                assertEquals(TestS3Server.sha256(data), TestS3Server.sha256(read(onePart, server.url(), data.length)));
            }
            PrintStream err = System.err;
            ByteArrayOutputStream said = new ByteArrayOutputStream();
            try (HttpObjectStore parts = new HttpObjectStore(options(3, Duration.ofSeconds(5)))) {
                System.setErr(new PrintStream(said, true, StandardCharsets.UTF_8));
                try {
                    assertEquals(
                            TestS3Server.sha256(data), TestS3Server.sha256(read(parts, server.url(), data.length)));
                    int before = server.requests.size();
                    assertEquals(
                            TestS3Server.sha256(data), TestS3Server.sha256(read(parts, server.url(), data.length)));
                    assertEquals(
                            List.of("GET bytes=0-" + (data.length - 1)),
                            server.requests.subList(before, server.requests.size()),
                            "the second read: one GET");
                } finally {
                    System.setErr(err);
                }
                List<String> lines =
                        said.toString(StandardCharsets.UTF_8).lines().toList();
                String host = server.url().substring(0, server.url().indexOf("/obj.tar"));
                assertEquals(1, lines.size(), lines.toString());
                assertTrue(
                        lines.get(0).startsWith("stoke: WARNING: " + host + " ignores the Range header")
                                && lines.get(0).contains("read whole by one GET"),
                        lines.get(0));
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment footer = arena.allocate(PART);
                    ShardFetchException e = assertThrows(
                            ShardFetchException.class,
                            () -> parts.readRange(server.url(), PART, data.length, footer, null));
                    assertTrue(
                            e.getMessage().startsWith(server.url() + ": ")
                                    && e.getMessage().contains("ignored the Range header")
                                    && e.getMessage().contains("reading part of an object needs a server with Range"),
                            e.getMessage());
                }
            }
        }
    }

    @Test
    void aTransferThatStallsMidBodyIsCutOffAndRetried() throws Exception {
        byte[] data = bytes(2 * PART + 7);
        try (RangeServer server = new RangeServer(data, false, false, true);
                HttpObjectStore store = new HttpObjectStore(
                        options(3, Duration.ofSeconds(8)).withStallTimeout(Duration.ofMillis(500)))) {
            long start = System.nanoTime();
            assertEquals(TestS3Server.sha256(data), TestS3Server.sha256(read(store, server.url(), data.length)));
            long millis = (System.nanoTime() - start) / 1_000_000;
            // At least one 500 ms stall was waited out; and all ended before the 8 s deadline. The stalls
            // and retries themselves are counted below.
            assertTrue(millis >= 500 && millis < 8000, "took " + millis + " ms");
            // Each of the 3 ranges: a first GET that stalled, a second that completed.
            assertEquals(
                    6, server.requests.stream().filter(r -> r.startsWith("GET")).count(), server.requests.toString());
            assertEquals(3, server.stalled.size(), server.requests.toString());
        }
    }

    @Test
    void theObjectsDeadlineEndsAReadThatStallsForever() throws Exception {
        byte[] data = bytes(1000);
        try (RangeServer server = new RangeServer(data, false, false, true);
                HttpObjectStore store = new HttpObjectStore(options(3, Duration.ofMillis(800)))) {
            long start = System.nanoTime();
            ShardFetchException e =
                    assertThrows(ShardFetchException.class, () -> read(store, server.url(), data.length));
            long millis = (System.nanoTime() - start) / 1_000_000;
            // The 800 ms deadline, not the server, ended it: not before it (less the clock's slack), and
            // well before a stall's own end (it never ends); the upper bound is generous for a loaded machine.
            assertTrue(millis >= 700 && millis < 5000, "took " + millis + " ms");
            assertTrue(
                    e.getMessage().startsWith(server.url() + ": ")
                            && e.getMessage().contains("deadline")
                            && e.getMessage().contains("attempt 1 of 3"),
                    e.getMessage());
        }
    }

    @Test
    void a501IsFinalAtOnceNotRetried() throws Exception {
        List<String> requests = new CopyOnWriteArrayList<>();
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/obj.tar", exchange -> {
            try (exchange) {
                requests.add(exchange.getRequestMethod() + " "
                        + exchange.getRequestHeaders().getFirst("Range"));
                if (exchange.getRequestMethod().equals("HEAD")) {
                    exchange.getResponseHeaders().set("Content-Length", "1000");
                    exchange.sendResponseHeaders(200, -1);
                } else {
                    exchange.sendResponseHeaders(501, -1);
                }
            }
        });
        server.start();
        String url = "http://127.0.0.1:" + server.getAddress().getPort() + "/obj.tar";
        try (HttpObjectStore store = new HttpObjectStore(options(5, Duration.ofSeconds(8)))) {
            long start = System.nanoTime();
            ShardFetchException e = assertThrows(ShardFetchException.class, () -> read(store, url, 1000));
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(millis < 1000, "took " + millis + " ms");
            assertTrue(
                    e.getMessage().startsWith(url + ": ")
                            && e.getMessage().contains("HTTP 501")
                            && e.getMessage().contains("does not support"),
                    e.getMessage());
            assertEquals(
                    List.of("GET bytes=0-999"),
                    requests.stream().filter(r -> r.startsWith("GET")).toList());
        } finally {
            server.stop(0);
        }
    }

    static byte[] bytes(int n) {
        byte[] b = new byte[n];
        new Random(n).nextBytes(b);
        return b;
    }

    /**
     * A JDK HttpServer with one object at /obj.tar, served without an ETag, that can refuse HEAD (405), ignore Range (200
     * with the whole object), or stall the first GET of each range after half its body.
     */
    static final class RangeServer implements AutoCloseable {
        private static final Pattern RANGE = Pattern.compile("bytes=(\\d+)-(\\d+)");
        final List<String> requests = new CopyOnWriteArrayList<>();
        final CopyOnWriteArrayList<String> stalled = new CopyOnWriteArrayList<>();
        private final HttpServer server;
        private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "range-server");
            t.setDaemon(true);
            return t;
        });
        private final CountDownLatch closing = new CountDownLatch(1);
        private volatile byte[] data;

        RangeServer(byte[] data, boolean refuseHead, boolean ignoreRange, boolean stallFirstGetOfEachRange)
                throws IOException {
            this.data = data;
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            server.setExecutor(executor);
            server.createContext("/obj.tar", exchange -> {
                try (exchange) {
                    serve(exchange, this.data, refuseHead, ignoreRange, stallFirstGetOfEachRange);
                } catch (IOException | InterruptedException e) {
                    // The client cut the connection (a stalled transfer it gave up on): expected here.
                }
            });
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort() + "/obj.tar";
        }

        /** Serves {@code bytes} from now on, under the same URL (and, as before, no ETag). */
        void replace(byte[] bytes) {
            this.data = bytes;
        }

        private void serve(HttpExchange exchange, byte[] data, boolean refuseHead, boolean ignoreRange, boolean stall)
                throws IOException, InterruptedException {
            String range = exchange.getRequestHeaders().getFirst("Range");
            String method = exchange.getRequestMethod();
            requests.add(method + " " + range);
            if (method.equals("HEAD")) {
                if (refuseHead) {
                    exchange.sendResponseHeaders(405, -1);
                } else {
                    exchange.getResponseHeaders().set("Content-Length", Integer.toString(data.length));
                    exchange.sendResponseHeaders(200, -1);
                }
                return;
            }
            Matcher m = range == null ? null : RANGE.matcher(range);
            if (ignoreRange || m == null || !m.matches()) {
                exchange.sendResponseHeaders(200, data.length);
                exchange.getResponseBody().write(data);
                return;
            }
            int first = Integer.parseInt(m.group(1));
            int last = Math.min(Integer.parseInt(m.group(2)), data.length - 1);
            int length = last - first + 1;
            exchange.getResponseHeaders().set("Content-Range", "bytes " + first + "-" + last + "/" + data.length);
            exchange.sendResponseHeaders(206, length);
            OutputStream body = exchange.getResponseBody();
            if (stall && stalled.addIfAbsent(range)) {
                body.write(data, first, length / 2);
                body.flush();
                closing.await(); // until the test ends: only the client's stall detection gets past this
                return;
            }
            body.write(data, first, length);
        }

        @Override
        public void close() {
            closing.countDown();
            server.stop(0);
            executor.shutdownNow();
        }
    }
}
