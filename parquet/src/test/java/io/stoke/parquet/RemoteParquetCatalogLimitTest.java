package io.stoke.parquet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.sun.net.httpserver.HttpServer;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteOptions;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A remote {@code parquet-index.json} is bounded as {@code index.json} is: a JDK HttpServer that
 * declares one byte over {@link ReadLimits#CATALOG_FILE} is refused by its size, with HEADs only.
 */
class RemoteParquetCatalogLimitTest {
    @Test
    void aParquetCatalogOverTheLimitIsRefusedByItsSizeWithoutAGet() throws Exception {
        List<String> requests = new CopyOnWriteArrayList<>();
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/pq/", exchange -> {
            try (exchange) {
                requests.add(exchange.getRequestMethod() + " "
                        + exchange.getRequestURI().getPath());
                exchange.getResponseHeaders().set("Content-Length", Long.toString(ReadLimits.CATALOG_FILE + 1));
                exchange.sendResponseHeaders(exchange.getRequestMethod().equals("HEAD") ? 200 : 500, -1);
            }
        });
        server.start();
        String folder = "http://127.0.0.1:" + server.getAddress().getPort() + "/pq/";
        try (ObjectStore store = ObjectStore.forUrl(
                folder, new RemoteOptions(2, 1 << 20, 2, Duration.ofSeconds(5), Duration.ofSeconds(2)))) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> RemoteParquet.catalog(folder, store));
            assertEquals(
                    folder + "parquet-index.json is 67108865 bytes, more than the 64 MiB limit of a file Stoke"
                            + " reads whole (a catalog or a marker)",
                    e.getMessage());
            assertEquals(List.of("HEAD /pq/parquet-index.json", "HEAD /pq/parquet-index.json"), requests);
        } finally {
            server.stop(0);
        }
    }
}
