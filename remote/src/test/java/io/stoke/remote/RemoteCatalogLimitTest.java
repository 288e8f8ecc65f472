package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.source.ShardDataset;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A remote {@code index.json} is bounded by its size, asked before anything is fetched: a JDK
 * HttpServer that declares one byte over {@link ReadLimits#CATALOG_FILE} gets one HEAD and no GET,
 * and the refusal names the URL and the limit; a catalog within it opens as before, fetched off the
 * heap and parsed from there.
 */
class RemoteCatalogLimitTest {
    private static final Pattern RANGE = Pattern.compile("bytes=(\\d+)-(\\d+)");
    private static final String INDEX = "{\"__kind__\": \"wids-shard-index-v1\", \"stoke\": {\"labelled\": true},"
            + " \"shardlist\": [{\"url\": \"a.tar\", \"nsamples\": 3, \"filesize\": 10240},"
            + " {\"url\": \"b.tar\", \"nsamples\": 4, \"filesize\": 10240}]}";

    @Test
    void aCatalogOverTheLimitIsRefusedByItsSizeWithoutAGet() throws Exception {
        try (IndexServer server = new IndexServer(ReadLimits.CATALOG_FILE + 1);
                ObjectStore store = ObjectStore.forUrl(server.url(), options())) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> RemoteDatasets.openCatalog(store, server.url(), 1 << 20, null, FolderAccess.PRIVATE));
            assertEquals(
                    server.url() + " is 67108865 bytes, more than the 64 MiB limit of a file Stoke reads whole"
                            + " (a catalog or a marker)",
                    e.getMessage());
            assertEquals(List.of("HEAD null"), server.requests);
        }
    }

    @Test
    void aCatalogWithinTheLimitOpensFromWhatIsFetched() throws Exception {
        try (IndexServer server = new IndexServer(-1);
                ObjectStore store = ObjectStore.forUrl(server.url(), options());
                ShardDataset d = RemoteDatasets.openCatalog(store, server.url(), 1 << 20, null, FolderAccess.PRIVATE)) {
            assertEquals(7, d.size());
            assertEquals(2, d.shards().shardCount());
            assertEquals(List.of("HEAD null", "GET bytes=0-" + (INDEX.length() - 1)), server.requests);
        }
    }

    private static RemoteOptions options() {
        return new RemoteOptions(2, 1 << 20, 2, Duration.ofSeconds(5), Duration.ofSeconds(2));
    }

    /**
     * Serves {@code /ds/index.json}: {@link #INDEX}, or, given a {@code declared} size, a HEAD of that
     * size and zeros for any range asked of it.
     */
    private static final class IndexServer implements AutoCloseable {
        final List<String> requests = new CopyOnWriteArrayList<>();
        private final HttpServer server;

        IndexServer(long declared) throws IOException {
            byte[] index = INDEX.getBytes(StandardCharsets.US_ASCII);
            long size = declared >= 0 ? declared : index.length;
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            server.createContext("/ds/index.json", exchange -> {
                try (exchange) {
                    serve(exchange, declared >= 0 ? null : index, size);
                }
            });
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort() + "/ds/index.json";
        }

        private void serve(HttpExchange exchange, byte[] data, long size) throws IOException {
            String range = exchange.getRequestHeaders().getFirst("Range");
            requests.add(exchange.getRequestMethod() + " " + range);
            if (exchange.getRequestMethod().equals("HEAD")) {
                exchange.getResponseHeaders().set("Content-Length", Long.toString(size));
                exchange.sendResponseHeaders(200, -1);
                return;
            }
            Matcher m = RANGE.matcher(range == null ? "" : range);
            if (!m.matches()) {
                exchange.sendResponseHeaders(400, -1);
                return;
            }
            int first = Integer.parseInt(m.group(1));
            int last = (int) Math.min(Long.parseLong(m.group(2)), size - 1);
            exchange.getResponseHeaders().set("Content-Range", "bytes " + first + "-" + last + "/" + size);
            exchange.sendResponseHeaders(206, last - first + 1);
            byte[] body =
                    data != null ? java.util.Arrays.copyOfRange(data, first, last + 1) : new byte[last - first + 1];
            exchange.getResponseBody().write(body);
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }
}
