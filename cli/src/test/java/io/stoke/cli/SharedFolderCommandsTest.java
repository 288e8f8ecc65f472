package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.LibC;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The commands' writes into folders others may share: {@code serve --index-out} and {@code stoke
 * index} never write through a link planted at the file's name or at the fixed temporary name an
 * older Stoke used (the targets keep their bytes); the restart cache a command makes is its user's
 * alone (modes read back by the JDK); another user's cache folder is refused in one sentence naming
 * it and its owner, and used when shared with its group on purpose ({@code --cache-shared-with}).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class SharedFolderCommandsTest {
    private static final int NOBODY = 65534;

    @TempDir
    Path tmp;

    private static String mode(Path p) throws Exception {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS));
    }

    /** Links at {@code names} in {@code dir}, each to a file of its own elsewhere; returns those files. */
    private List<Path> plant(Path dir, String... names) throws Exception {
        Path victims = Files.createDirectories(tmp.resolve("victims-" + dir.getFileName()));
        List<Path> targets = new java.util.ArrayList<>();
        for (String name : names) {
            Path victim = Files.writeString(victims.resolve(name), "precious " + name);
            Files.createSymbolicLink(dir.resolve(name), victim);
            targets.add(victim);
        }
        return targets;
    }

    private static void assertUnchanged(List<Path> victims) throws Exception {
        for (Path victim : victims) {
            assertEquals(
                    "precious " + victim.getFileName(),
                    Files.readString(victim),
                    victim + " was written through a link");
        }
    }

    @Test
    void serveWritesItsIndexOverAPlantedLinkNeverThroughIt() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 6, 2, 3);
        Path shared = Files.createDirectories(tmp.resolve("shared"));
        Path index = shared.resolve("index.jsonl");
        List<Path> victims = plant(shared, "index.jsonl", "index.jsonl.tmp");
        Path ring = ShmTestSupport.shmPath("index-out-link");
        try (ShmTestSupport.Child serve = new ShmTestSupport.Child(ShmTestSupport.javaCommand(
                Main.class.getName(),
                "serve",
                data.toString(),
                "--ring",
                ring.toString(),
                "--index-out",
                index.toString(),
                "--batch-size",
                "2",
                "--workers",
                "1",
                "--epochs",
                "1"))) {
            // The index is written before the ring exists; nothing reads the ring, so serve waits then.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!Files.isRegularFile(index, LinkOption.NOFOLLOW_LINKS) && System.nanoTime() < deadline) {
                assertTrue(serve.process.isAlive(), serve.output());
                Thread.sleep(20);
            }
            assertTrue(Files.isRegularFile(index, LinkOption.NOFOLLOW_LINKS), "no index: " + serve.output());
            assertTrue(Files.readString(index).startsWith("{\"samples\":6,\"listed\":true"), Files.readString(index));
            assertEquals("rw-------", mode(index), "the sample names are the user's");
            assertUnchanged(victims);
        } finally {
            Files.deleteIfExists(ring);
            // Killed while it made the ring (the index comes first): its unfinished file too.
            try (var unfinished = Files.newDirectoryStream(ring.getParent(), ring.getFileName() + ".tmp-*")) {
                for (Path f : unfinished) {
                    Files.deleteIfExists(f);
                }
            }
        }
    }

    @Test
    void catalogWritesOverPlantedLinksNeverThroughThem() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("shards"));
        TestTars.labelledShard(dir.resolve("part-0.tar"), 0, 3);
        List<Path> victims = plant(dir, "index.json", "index.json.tmp");
        String[] r = BenchCommandTest.run("catalog", dir.toString());
        assertEquals("0", r[0], r[2]);
        assertUnchanged(victims);
        assertTrue(Files.isRegularFile(dir.resolve("index.json"), LinkOption.NOFOLLOW_LINKS));
        assertTrue(Files.readString(dir.resolve("index.json")).contains("part-0.tar"));
    }

    @Test
    void theCacheACommandMakesIsItsUsersAlone() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path data = TestImages.imageFolder(tmp.resolve("data"), 6, 2, 3);
        Path cache = tmp.resolve("made/cache");
        String[] r = BenchCommandTest.run("cache", data.toString(), "--restart-cache-dir", cache.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        assertEquals("rwx------", mode(cache));
        assertEquals("rw-------", mode(cache.resolve(".stoke-cache-usage")));
        List<Path> entries;
        try (Stream<Path> s = Files.walk(cache)) {
            entries = s.filter(p -> p.toString().endsWith(".stc")).toList();
        }
        assertEquals(6, entries.size());
        for (Path entry : entries) {
            assertEquals("rw-------", mode(entry), entry.toString());
            assertEquals("rwx------", mode(entry.getParent()), entry.getParent().toString());
        }
    }

    /**
     * The JDK's HTTP server on loopback with {@code objects} at their paths: HEAD and ranged GETs, an
     * ETag each, as a static file server answers.
     */
    private static com.sun.net.httpserver.HttpServer serve(java.util.Map<String, byte[]> objects) throws Exception {
        var server = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", exchange -> {
            try (exchange) {
                byte[] data = objects.get(exchange.getRequestURI().getPath());
                if (data == null) {
                    exchange.sendResponseHeaders(404, -1);
                    return;
                }
                exchange.getResponseHeaders().set("ETag", "\"" + java.util.Arrays.hashCode(data) + "\"");
                exchange.getResponseHeaders().set("Accept-Ranges", "bytes");
                if (exchange.getRequestMethod().equals("HEAD")) {
                    exchange.getResponseHeaders().set("Content-Length", Integer.toString(data.length));
                    exchange.sendResponseHeaders(200, -1);
                    return;
                }
                int from = 0;
                int to = data.length - 1;
                String range = exchange.getRequestHeaders().getFirst("Range");
                var m = range == null
                        ? null
                        : java.util.regex.Pattern.compile("bytes=(\\d+)-(\\d*)").matcher(range);
                if (m != null && m.matches()) {
                    from = Integer.parseInt(m.group(1));
                    to = m.group(2).isEmpty() ? to : Math.min(to, Integer.parseInt(m.group(2)));
                    exchange.getResponseHeaders().set("Content-Range", "bytes " + from + "-" + to + "/" + data.length);
                    exchange.sendResponseHeaders(206, to - from + 1);
                } else {
                    exchange.sendResponseHeaders(200, data.length);
                }
                exchange.getResponseBody().write(data, from, to - from + 1);
            }
        });
        server.start();
        return server;
    }

    /** --cache-shared-with reaches the shard cache's folder too: refused as another user's, used as the group's. */
    @Test
    void anotherUsersShardCacheFolderIsRefusedUnlessSharedWithItsGroup() throws Exception {
        Assumptions.assumeTrue(LibC.geteuid() == 0, "needs root to give a folder to another user (CI runs as root)");
        Path shards = Files.createDirectories(tmp.resolve("shards"));
        java.util.Map<String, byte[]> objects = new java.util.HashMap<>();
        for (int s = 0; s < 2; s++) {
            Path file = shards.resolve("s-" + s + ".tar");
            TestTars.labelledShard(file, s, 3);
            objects.put("/d/s-" + s + ".tar", Files.readAllBytes(file));
        }
        var server = serve(objects);
        try {
            String url = "http://127.0.0.1:" + server.getAddress().getPort() + "/d/s-{0..1}.tar";
            Path theirs = Files.createDirectory(tmp.resolve("theirs"));
            Files.setAttribute(theirs, "unix:uid", NOBODY);
            Files.setAttribute(theirs, "unix:gid", 0);
            Files.setAttribute(theirs, "unix:mode", 02770);
            String[] refused = BenchCommandTest.run(
                    "bench",
                    url,
                    "--shard-cache-dir",
                    theirs.toString(),
                    "--batch-size",
                    "2",
                    "--workers",
                    "1",
                    "--no-warmup",
                    "--resize",
                    "32",
                    "--crop",
                    "32");
            assertNotEquals("0", refused[0], refused[1] + refused[2]);
            assertTrue(
                    refused[2].contains("refusing " + theirs + " as the shard cache: it belongs to nobody (uid 65534)"),
                    refused[2]);
            String[] shared = BenchCommandTest.run(
                    "bench",
                    url,
                    "--shard-cache-dir",
                    theirs.toString(),
                    "--cache-shared-with",
                    "root",
                    "--batch-size",
                    "2",
                    "--workers",
                    "1",
                    "--no-warmup",
                    "--resize",
                    "32",
                    "--crop",
                    "32");
            assertEquals("0", shared[0], shared[1] + shared[2]);
            assertTrue(shared[1].contains("6 in 3 batches (0 skipped"), shared[1]);
        } finally {
            server.stop(0);
        }
    }

    @Test
    void anotherUsersCacheFolderIsRefusedUnlessSharedWithItsGroup() throws Exception {
        Assumptions.assumeTrue(LibC.geteuid() == 0, "needs root to give a folder to another user (CI runs as root)");
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path data = TestImages.imageFolder(tmp.resolve("data"), 6, 2, 3);
        Path theirs = Files.createDirectory(tmp.resolve("theirs"));
        Files.setAttribute(theirs, "unix:uid", NOBODY);
        Files.setAttribute(theirs, "unix:gid", 0);
        Files.setAttribute(theirs, "unix:mode", 02770);
        String refusal = "refusing " + theirs + " as the restart cache: it belongs to nobody (uid 65534), not to ";

        String[] cache = BenchCommandTest.run("cache", data.toString(), "--restart-cache-dir", theirs.toString());
        assertEquals("1", cache[0], cache[1] + cache[2]);
        assertTrue(cache[2].contains(refusal), cache[2]);
        assertTrue(cache[2].contains("--cache-shared-with GROUP"), cache[2]);
        assertEquals(1, cache[2].strip().lines().count(), "one sentence: " + cache[2]);
        String[] bench = BenchCommandTest.run(
                "bench",
                data.toString(),
                "--cache-dir",
                theirs.toString(),
                "--batch-size",
                "2",
                "--workers",
                "1",
                "--no-warmup");
        assertNotEquals("0", bench[0], bench[1] + bench[2]);
        assertTrue(bench[2].contains(refusal), bench[2]);
        try (Stream<Path> s = Files.list(theirs)) {
            assertEquals(List.of(), s.toList(), "nothing written into a refused folder");
        }

        // Shared with its group on purpose: used, and what is made there is the group's to read.
        String[] shared = BenchCommandTest.run(
                "cache", data.toString(), "--restart-cache-dir", theirs.toString(), "--cache-shared-with", "root");
        assertEquals("0", shared[0], shared[1] + shared[2]);
        assertTrue(shared[1].contains(": 6 copied"), shared[1]);
        try (Stream<Path> s = Files.walk(theirs)) {
            for (Path entry : s.filter(p -> p.toString().endsWith(".stc")).toList()) {
                assertEquals("rw-r-----", mode(entry), entry.toString());
            }
        }
        String[] otherGroup = BenchCommandTest.run(
                "cache", data.toString(), "--restart-cache-dir", theirs.toString(), "--cache-shared-with", "nogroup");
        assertEquals("1", otherGroup[0]);
        assertTrue(
                otherGroup[2].contains("shared with group nogroup: it belongs to nobody (uid 65534) and to group root"),
                otherGroup[2]);
        String[] badName = BenchCommandTest.run(
                "cache", data.toString(), "--restart-cache-dir", theirs.toString(), "--cache-shared-with", "a/b");
        assertEquals(Integer.toString(Main.EXIT_USAGE), badName[0]);
        assertTrue(badName[2].contains("--cache-shared-with: not a group name: 'a/b'"), badName[2]);
    }
}
