package io.stoke.remote;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A plain HTTP server on loopback (the JDK's) with objects at paths, answering HEAD and ranged GETs
 * as a static file server does, and counting the GETs and the body bytes it serves per path: what a
 * test asserts about how often a shard was fetched. Its objects' versions are what a server tells:
 * an ETag, a Last-Modified time (the same for every object, as for files copied in one go), both, or
 * neither.
 */
public final class ShardServer implements AutoCloseable {
    /** What the server names an object's version by. */
    public enum Versions {
        ETAG,
        LAST_MODIFIED,
        NONE
    }

    static final String LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT";
    private static final Pattern RANGE = Pattern.compile("bytes=(\\d+)-(\\d+)");

    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "shard-server");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, byte[]> objects = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> gets = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> bytes = new ConcurrentHashMap<>();
    private final Versions versions;
    private final Map<String, CountDownLatch> held = new ConcurrentHashMap<>();

    public ShardServer(Versions versions) throws IOException {
        this.versions = versions;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(executor);
        server.createContext("/", exchange -> {
            try (exchange) {
                serve(exchange);
            } catch (IOException e) {
                // the client went away
            }
        });
        server.start();
    }

    /** Serves {@code data} at {@code path} ("/a/s-0.tar"), from now on. */
    public void put(String path, byte[] data) {
        objects.put(path, data);
    }

    public String url(String path) {
        return "http://127.0.0.1:" + server.getAddress().getPort() + path;
    }

    /** GETs of {@code path} wait (up to a minute) from now until {@link #release}: a fetch cut off in its middle. */
    void hold(String path) {
        held.put(path, new CountDownLatch(1));
    }

    void release(String path) {
        CountDownLatch latch = held.remove(path);
        if (latch != null) {
            latch.countDown();
        }
    }

    /** GET requests answered for {@code path}. */
    long gets(String path) {
        AtomicLong n = gets.get(path);
        return n == null ? 0 : n.get();
    }

    /** Body bytes served for {@code path} by GETs. */
    long bytesServed(String path) {
        AtomicLong n = bytes.get(path);
        return n == null ? 0 : n.get();
    }

    private void serve(HttpExchange exchange) throws IOException {
        String path = exchange.getRequestURI().getPath();
        byte[] data = objects.get(path);
        if (data == null) {
            exchange.sendResponseHeaders(404, -1);
            return;
        }
        if (versions == Versions.ETAG) {
            exchange.getResponseHeaders()
                    .set("ETag", "\"" + Integer.toHexString(java.util.Arrays.hashCode(data)) + "\"");
        } else if (versions == Versions.LAST_MODIFIED) {
            exchange.getResponseHeaders().set("Last-Modified", LAST_MODIFIED);
        }
        if (exchange.getRequestMethod().equals("HEAD")) {
            exchange.getResponseHeaders().set("Content-Length", Integer.toString(data.length));
            exchange.sendResponseHeaders(200, -1);
            return;
        }
        CountDownLatch latch = held.get(path);
        if (latch != null) {
            try {
                latch.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        gets.computeIfAbsent(path, p -> new AtomicLong()).incrementAndGet();
        String range = exchange.getRequestHeaders().getFirst("Range");
        Matcher m = range == null ? null : RANGE.matcher(range);
        int first = 0;
        int last = data.length - 1;
        if (m != null && m.matches()) {
            first = Integer.parseInt(m.group(1));
            last = Math.min(Integer.parseInt(m.group(2)), data.length - 1);
            exchange.getResponseHeaders().set("Content-Range", "bytes " + first + "-" + last + "/" + data.length);
            exchange.sendResponseHeaders(206, last - first + 1);
        } else {
            exchange.sendResponseHeaders(200, data.length);
        }
        exchange.getResponseBody().write(data, first, last - first + 1);
        bytes.computeIfAbsent(path, p -> new AtomicLong()).addAndGet(last - first + 1);
    }

    @Override
    public void close() {
        held.values().forEach(CountDownLatch::countDown);
        server.stop(0);
        executor.shutdownNow();
    }
}
