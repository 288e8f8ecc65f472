package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.internal.SafeFiles;
import io.stoke.loader.source.ShardCatalog;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One shard-cache folder shared by the ranks and jobs of a node ({@link ShardFolder}), with real
 * processes: jobs whose shards have the same names and sizes each read only their own pixels and
 * labels; two ranks fetch each shard once between them, counted at the server; a file another
 * process maps is never removed under it; the folder and its files are 0700 and 0600.
 */
class SharedShardCacheTest {
    static final int SHARDS = 4;
    static final int PER_SHARD = 6;

    static TestS3Server.TestAwsProperties properties;
    static TestS3Server s3;
    static ShardServer http;
    static List<byte[]> jobA = new ArrayList<>();
    static List<byte[]> jobB = new ArrayList<>();
    static long largest;

    @BeforeAll
    static void start(@TempDir Path home) throws Exception {
        properties = new TestS3Server.TestAwsProperties(home);
        s3 = new TestS3Server();
        System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, s3.endpoint().toString());
        s3.createBucket("node", false);
        http = new ShardServer(ShardServer.Versions.LAST_MODIFIED);
        for (int s = 0; s < SHARDS; s++) {
            byte[] a = shard(s, false);
            byte[] b = shard(s, true);
            assertEquals(a.length, b.length, "job B's shard " + s + " is job A's size: the same name and size");
            assertFalse(java.util.Arrays.equals(a, b));
            jobA.add(a);
            jobB.add(b);
            largest = Math.max(largest, a.length);
            http.put("/a/s-" + s + ".tar", a);
            http.put("/b/s-" + s + ".tar", b);
            s3.put("node", "ranks/s-" + s + ".tar", a);
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (http != null) {
            http.close();
        }
        if (s3 != null) {
            s3.close();
        }
        if (properties != null) {
            properties.close();
        }
    }

    /**
     * Shard {@code s} of job A, or of job B: the same keys, with B's JPEGs those of A in reverse order
     * (other pixels, the same multiset of member sizes, so the same tar size) and B's labels A's plus 1.
     */
    static byte[] shard(int s, boolean b) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(out)) {
            for (int i = 0; i < PER_SHARD; i++) {
                int j = b ? PER_SHARD - 1 - i : i;
                int label = ((s * PER_SHARD + i) % 4 + (b ? 1 : 0)) % 4;
                TestTars.member(
                        tar, "k/" + s + "-" + i + ".jpg", TestImages.jpeg(48 + 3 * j, 40 + 5 * s, 100L * s + j));
                TestTars.member(
                        tar,
                        "k/" + s + "-" + i + ".cls",
                        Integer.toString(label).getBytes(StandardCharsets.US_ASCII));
            }
        }
        return out.toByteArray();
    }

    /**
     * Jobs A (http://host/a/s-{0..3}.tar) and B (http://host/b/s-{0..3}.tar), the same shard names and
     * sizes and the same Last-Modified, at the same time in two processes on one shard-cache folder
     * that holds two shards a job (so shards are evicted and fetched again while the other job reads):
     * each gets every batch as it does without a folder.
     */
    @Test
    void twoJobsOnOneFolderEachReadOnlyTheirOwnPixelsAndLabels(@TempDir Path tmp) throws Exception {
        Path folder = tmp.resolve("shards");
        String a = http.url("/a/s-{0..3}.tar");
        String b = http.url("/b/s-{0..3}.tar");
        long capacity = 2 * largest;
        List<String> wantA = SharedCacheJob.run(a, null, capacity, 0, 1, 3, new long[3], () -> {});
        List<String> wantB = SharedCacheJob.run(b, null, capacity, 0, 1, 3, new long[3], () -> {});
        assertFalse(wantA.equals(wantB), "the two jobs' batches differ");
        List<Job> jobs = startTogether(
                tmp, List.of(args(a, folder, capacity, 0, 1, 3), args(b, folder, capacity, 0, 1, 3)), Map.of());
        assertEquals(wantA, jobs.get(0).batches(), "job A's batches through the shared folder");
        assertEquals(wantB, jobs.get(1).batches(), "job B's batches through the shared folder");
        assertEquals(List.of(), leftIn(folder), "the jobs' files go with them");
    }

    /**
     * Two ranks of one job over s3proxy, in two processes on one folder that holds every shard:
     * between them each shard is fetched once (its bytes, counted at a proxy in front of the server),
     * and each rank's batches are those it gets alone without a folder. Without the folder, twice.
     */
    @Test
    void twoRanksOnOneFolderFetchEachShardOnceBetweenThem(@TempDir Path tmp) throws Exception {
        String spec = "s3://node/ranks/s-{0..3}.tar";
        long capacity = (SHARDS + 1) * largest;
        List<String> want0 = SharedCacheJob.run(spec, null, capacity, 0, 2, 1, new long[3], () -> {});
        List<String> want1 = SharedCacheJob.run(spec, null, capacity, 1, 2, 1, new long[3], () -> {});
        for (boolean shared : new boolean[] {true, false}) {
            Path folder = shared ? tmp.resolve("shards") : null;
            try (FaultProxy proxy = new FaultProxy(s3.port())) {
                Map<String, String> props =
                        Map.of(S3ObjectStore.ENDPOINT_PROPERTY, proxy.endpoint().toString());
                List<Job> ranks = startTogether(
                        tmp.resolve(shared ? "shared" : "alone"),
                        List.of(args(spec, folder, capacity, 0, 2, 1), args(spec, folder, capacity, 1, 2, 1)),
                        props);
                assertEquals(want0, ranks.get(0).batches(), "rank 0");
                assertEquals(want1, ranks.get(1).batches(), "rank 1");
                Map<String, Long> served = getBytesByObject(proxy);
                for (int s = 0; s < SHARDS; s++) {
                    assertEquals(
                            (shared ? 1 : 2) * (long) jobA.get(s).length,
                            served.getOrDefault("/node/ranks/s-" + s + ".tar", 0L),
                            "bytes of shard " + s + " served to the two ranks " + (shared ? "sharing" : "without")
                                    + " a folder: " + served);
                }
                if (shared) {
                    long fetched = ranks.get(0).fetches() + ranks.get(1).fetches();
                    long found = ranks.get(0).found() + ranks.get(1).found();
                    assertEquals(SHARDS, fetched, "one rank fetched each shard");
                    assertEquals(SHARDS, found, "the other found it in the folder");
                }
            }
        }
    }

    /**
     * A process that evicts a shard (or closes) while another maps it leaves the file, and the other
     * reads it whole, with no SIGBUS; the last one out removes it. Two caches in one JVM hold their
     * locks as two processes do (flock belongs to the open file).
     */
    @Test
    void aShardAnotherCacheMapsIsNeverRemovedUnderIt(@TempDir Path tmp) {
        Path folder = tmp.resolve("shards");
        List<String> urls = List.of(http.url("/a/s-0.tar"), http.url("/a/s-1.tar"), http.url("/a/s-2.tar"));
        long[] sizes = {jobA.get(0).length, jobA.get(1).length, jobA.get(2).length};
        long fetched = http.gets("/a/s-0.tar");
        try (RemoteShards holder = cache(urls, sizes, folder)) {
            MemorySegment held = holder.acquire(0);
            try (RemoteShards evictor = cache(urls, sizes, folder)) {
                MemorySegment same = evictor.acquire(0);
                assertEquals(1, evictor.found(), "the second cache mapped the first one's file");
                assertArrayEquals(jobA.get(0), same.toArray(ValueLayout.JAVA_BYTE));
                evictor.release(0);
                evictor.acquire(1); // the cache holds two of these shards: 2 evicts 0
                evictor.release(1);
                evictor.acquire(2);
                evictor.release(2);
                assertEquals(null, evictor.acquireIfLoaded(0), "the second cache evicted shard 0");
                assertEquals(3, shardFiles(folder).size(), "shard 0, which the first cache maps, stays");
            }
            assertEquals(
                    List.of(ShardFolder.name(urls.get(0), version(0))),
                    shardFiles(folder),
                    "shard 0 stays; 1 and 2, which only the second cache mapped, went as it closed");
            assertArrayEquals(jobA.get(0), held.toArray(ValueLayout.JAVA_BYTE), "read whole, after the eviction");
            holder.release(0);
        }
        assertEquals(List.of(), leftIn(folder), "the last cache out removed it, and the lock files");
        assertTrue(http.gets("/a/s-0.tar") > fetched);
    }

    /**
     * Shards opened from an index.json that carries no ETags: each one's version is asked of the store
     * (one HEAD) before its first fetch, so a second dataset on the folder maps what the first fetched.
     */
    @Test
    void shardsOfACatalogWithoutETagsAreNamedByTheStoresVersionAndShared(@TempDir Path tmp) throws Exception {
        List<ShardCatalog.Entry> entries = new ArrayList<>();
        for (int s = 0; s < SHARDS; s++) {
            s3.put("node", "indexed/s-" + s + ".tar", jobA.get(s));
            entries.add(new ShardCatalog.Entry("s-" + s + ".tar", PER_SHARD, jobA.get(s).length, null));
        }
        ByteArrayOutputStream json = new ByteArrayOutputStream();
        new ShardCatalog(entries, true).write(json, "test");
        s3.put("node", "indexed/" + ShardCatalog.FILE, json.toByteArray());
        Path folder = tmp.resolve("shards");
        long capacity = (SHARDS + 1) * largest;
        List<String> want = SharedCacheJob.run("s3://node/indexed/", null, capacity, 0, 1, 1, new long[3], () -> {});
        long[] first = new long[3];
        long[] second = new long[3];
        List<String> got = SharedCacheJob.run("s3://node/indexed/", folder, capacity, 0, 1, 1, first, () -> {
            assertEquals(
                    want,
                    SharedCacheJob.run("s3://node/indexed/", folder, capacity, 0, 1, 1, second, () -> {}),
                    "the second dataset's batches");
        });
        assertEquals(want, got);
        assertEquals(SHARDS, first[0], "the first dataset fetched every shard");
        assertEquals(0, second[0], "the second fetched none");
        assertEquals(SHARDS, second[2], "it mapped the first one's files");
    }

    /**
     * A process killed (SIGKILL) in the middle of a fetch leaves its temporary file; the next process
     * to open the folder removes it, and leaves the temporary file of a fetch that is still going on
     * (its process holds the shard's lock). So with the files of unversioned shards: a dead process's
     * goes, a live one's (locked) stays.
     */
    @Test
    void whatAProcessKilledMidFetchLeftIsRemovedAndALiveFetchIsLetBe(@TempDir Path tmp) throws Exception {
        Path folder = tmp.resolve("shards");
        try (ShardServer slow = new ShardServer(ShardServer.Versions.ETAG);
                ShardServer bare = new ShardServer(ShardServer.Versions.NONE)) {
            for (int s = 0; s < 2; s++) {
                slow.put("/a/s-" + s + ".tar", jobA.get(s));
            }
            bare.put("/a/s-0.tar", jobA.get(0));
            slow.hold("/a/s-0.tar");
            Path go = Files.createFile(tmp.resolve("go"));
            Process killed = new ProcessBuilder(
                            command(args(slow.url("/a/s-{0..1}.tar"), folder, 4 * largest, 0, 1, 1), go, 1, Map.of()))
                    .redirectErrorStream(true)
                    .redirectOutput(tmp.resolve("killed.out").toFile())
                    .start();
            Path dead;
            try {
                dead = await(folder, SafeFiles.TEMPORARY, null);
            } finally {
                killed.destroyForcibly(); // SIGKILL: no finally, no shutdown hook runs in it
                killed.waitFor();
            }
            List<String> urls = List.of(slow.url("/a/s-0.tar"), slow.url("/a/s-1.tar"));
            long[] sizes = {jobA.get(0).length, jobA.get(1).length};
            slow.hold("/a/s-1.tar");
            try (RemoteShards live = cache(urls, sizes, folder);
                    RemoteShards own = cache(List.of(bare.url("/a/s-0.tar")), new long[] {sizes[0]}, folder)) {
                assertFalse(Files.exists(dead), "the killed process's temporary file went as the next cache opened");
                java.util.concurrent.CompletableFuture<byte[]> fetching =
                        java.util.concurrent.CompletableFuture.supplyAsync(
                                () -> live.acquire(1).toArray(ValueLayout.JAVA_BYTE));
                Path going = await(folder, SafeFiles.TEMPORARY, dead);
                own.acquire(0); // a private file, locked while this process maps it
                Path deadOwn = folder.resolve(
                        ShardFolder.name(bare.url("/x"), "x").substring(0, 64) + ".99999999.ab" + ShardFolder.PRIVATE);
                Files.write(deadOwn, new byte[10]); // as a killed process leaves one
                Path liveOwn = leftIn(folder).stream()
                        .filter(f -> f.endsWith(ShardFolder.PRIVATE)
                                && !folder.resolve(f).equals(deadOwn))
                        .map(folder::resolve)
                        .findFirst()
                        .orElseThrow();
                for (Path f : List.of(deadOwn, liveOwn)) { // older than the minute a new private file is let be
                    Files.setLastModifiedTime(
                            f,
                            java.nio.file.attribute.FileTime.from(
                                    java.time.Instant.now().minusSeconds(120)));
                }
                try (RemoteShards later = cache(urls, sizes, folder)) { // its folder's sweep, as it opens
                    assertEquals(0, later.fetches());
                    assertTrue(Files.exists(going), "the live fetch's temporary file is let be");
                    assertFalse(Files.exists(deadOwn), "a dead process's private file is removed");
                    assertTrue(Files.exists(liveOwn), "a live one's is not");
                }
                slow.release("/a/s-1.tar");
                assertArrayEquals(jobA.get(1), fetching.get(30, TimeUnit.SECONDS), "the live fetch ends whole");
                live.release(1);
                own.release(0);
            } finally {
                slow.release("/a/s-0.tar");
                slow.release("/a/s-1.tar");
            }
        }
    }

    /** The first file in {@code folder} whose name ends with {@code suffix}, other than {@code not}, once there is one. */
    static Path await(Path folder, String suffix, Path not) throws InterruptedException {
        long until = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < until) {
            if (Files.isDirectory(folder)) {
                for (String f : leftIn(folder)) {
                    if (f.endsWith(suffix) && !folder.resolve(f).equals(not)) {
                        return folder.resolve(f);
                    }
                }
            }
            Thread.sleep(5);
        }
        throw new AssertionError("no *" + suffix + " in " + folder + " within 60 s");
    }

    /** The folder is 0700, and every shard file and lock file in it 0600, as stat(1) reads them. */
    @Test
    void theFolderIs0700AndItsFiles0600(@TempDir Path tmp) throws Exception {
        Path folder = tmp.resolve("shards");
        List<String> urls = List.of(http.url("/a/s-0.tar"), http.url("/b/s-1.tar"));
        long[] sizes = {jobA.get(0).length, jobB.get(1).length};
        try (RemoteShards cache = cache(urls, sizes, folder)) {
            cache.acquire(0);
            cache.acquire(1);
            List<String> files = leftIn(folder);
            assertEquals(4, files.size(), "two shards and their lock files: " + files);
            assertEquals("700", stat(folder));
            for (String f : files) {
                assertEquals("600", stat(folder.resolve(f)), f);
            }
            cache.release(0);
            cache.release(1);
        }
    }

    /**
     * A shard whose server names no version (no ETag, no Last-Modified) cannot be told from another
     * object at its URL: each cache gets a file of its own, which the other never reads, and is told so.
     */
    @Test
    void aShardWithoutAVersionIsNeverShared(@TempDir Path tmp) throws Exception {
        Path folder = tmp.resolve("shards");
        try (ShardServer bare = new ShardServer(ShardServer.Versions.NONE)) {
            bare.put("/a/s-0.tar", jobA.get(0));
            List<String> urls = List.of(bare.url("/a/s-0.tar"));
            long[] sizes = {jobA.get(0).length};
            try (RemoteShards one = cache(urls, sizes, folder);
                    RemoteShards two = cache(urls, sizes, folder)) {
                assertArrayEquals(jobA.get(0), one.acquire(0).toArray(ValueLayout.JAVA_BYTE));
                assertArrayEquals(jobA.get(0), two.acquire(0).toArray(ValueLayout.JAVA_BYTE));
                assertEquals(0, two.found());
                assertEquals(2, bare.gets("/a/s-0.tar"), "each fetched it");
                assertEquals(List.of(), shardFiles(folder));
                assertEquals(
                        2,
                        leftIn(folder).stream()
                                .filter(f -> f.endsWith(".private"))
                                .count());
                one.release(0);
                two.release(0);
            }
            assertEquals(List.of(), leftIn(folder));
        }
    }

    /** A file at a shard's name that is not the shard's size, or a link planted there, is refused by name. */
    @Test
    void aFileOfAnotherSizeOrALinkAtAShardsNameIsRefusedNamingIt(@TempDir Path tmp) throws Exception {
        Path folder = tmp.resolve("shards");
        List<String> urls = List.of(http.url("/a/s-0.tar"), http.url("/a/s-1.tar"));
        long[] sizes = {jobA.get(0).length, jobA.get(1).length};
        Files.createDirectories(folder);
        Files.setPosixFilePermissions(folder, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        Path wrong = folder.resolve(ShardFolder.name(urls.get(0), version(0)));
        Files.write(wrong, new byte[100]);
        Path target = tmp.resolve("target");
        Files.writeString(target, "unchanged");
        Path link = folder.resolve(ShardFolder.name(urls.get(1), version(1)));
        Files.createSymbolicLink(link, target);
        try (RemoteShards cache = cache(urls, sizes, folder)) {
            ShardFetchException size = assertThrows(ShardFetchException.class, () -> cache.acquire(0));
            assertTrue(
                    size.getMessage().contains(wrong.toString())
                            && size.getMessage().contains("100 bytes"),
                    size.getMessage());
            ShardFetchException linked = assertThrows(ShardFetchException.class, () -> cache.acquire(1));
            assertTrue(
                    linked.getMessage().contains(link.toString())
                            && linked.getMessage().contains("symbolic link"),
                    linked.getMessage());
        }
        assertEquals("unchanged", Files.readString(target));
    }

    // ---- helpers ----

    static String version(int shard) {
        return "size " + jobA.get(shard).length + " modified " + ShardServer.LAST_MODIFIED;
    }

    static RemoteShards cache(List<String> urls, long[] sizes, Path folder) {
        // As a scan opens them: each shard's version from a HEAD.
        String[] modified = new String[sizes.length];
        ObjectStore store = new HttpObjectStore(RemoteShardsTest.fast());
        for (int s = 0; s < sizes.length; s++) {
            modified[s] = store.stat(urls.get(s)).lastModified();
        }
        return new RemoteShards(
                store,
                urls,
                sizes,
                new String[sizes.length],
                modified,
                2 * largest,
                folder,
                io.stoke.loader.fs.FolderAccess.PRIVATE,
                null);
    }

    static List<String> shardFiles(Path folder) {
        return leftIn(folder).stream()
                .filter(f -> f.endsWith(ShardFolder.SHARD))
                .toList();
    }

    static List<String> leftIn(Path folder) {
        try (Stream<Path> files = Files.list(folder)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static String stat(Path file) throws Exception {
        Process p = new ProcessBuilder("stat", "-c", "%a", file.toString())
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    static List<String> args(String spec, Path folder, long capacity, int rank, int world, int epochs) {
        return List.of(
                spec,
                folder == null ? "-" : folder.toString(),
                Long.toString(capacity),
                Integer.toString(rank),
                Integer.toString(world),
                Integer.toString(epochs));
    }

    /** One child process's output: its batches, and its cache's counts. */
    record Job(List<String> lines) {
        List<String> batches() {
            return lines.subList(1, lines.size() - 1);
        }

        long fetches() {
            return count(1);
        }

        long found() {
            return count(5);
        }

        private long count(int word) {
            return Long.parseLong(lines.get(lines.size() - 1).split(" ")[word]);
        }
    }

    /** The command that runs {@link SharedCacheJob} with {@code job}'s arguments, its go file and peers. */
    static List<String> command(List<String> job, Path go, int peers, Map<String, String> props) {
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED",
                "--add-exports",
                "java.base/jdk.internal.misc=ALL-UNNAMED",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1"));
        Map<String, String> all = new HashMap<>();
        for (String p : new String[] {
            "aws.accessKeyId",
            "aws.secretAccessKey",
            "aws.region",
            "aws.disableEc2Metadata",
            "aws.sharedCredentialsFile",
            "aws.configFile",
            S3ObjectStore.ENDPOINT_PROPERTY
        }) {
            if (System.getProperty(p) != null) {
                all.put(p, System.getProperty(p));
            }
        }
        all.putAll(props);
        all.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), SharedCacheJob.class.getName()));
        cmd.addAll(job);
        cmd.add(go.toString());
        cmd.add(Integer.toString(peers));
        return cmd;
    }

    /** Starts a {@link SharedCacheJob} for each of {@code jobs}, lets them go together, and waits for them. */
    static List<Job> startTogether(Path dir, List<List<String>> jobs, Map<String, String> props) throws Exception {
        Files.createDirectories(dir);
        Path go = dir.resolve("go");
        List<Process> processes = new ArrayList<>();
        List<Path> outs = new ArrayList<>();
        try {
            for (int j = 0; j < jobs.size(); j++) {
                List<String> cmd = command(jobs.get(j), go, jobs.size(), props);
                Path out = dir.resolve("job-" + j + ".out");
                outs.add(out);
                processes.add(new ProcessBuilder(cmd)
                        .redirectOutput(out.toFile())
                        .redirectError(dir.resolve("job-" + j + ".err").toFile())
                        .start());
            }
            long until = System.nanoTime() + 120_000_000_000L;
            for (int j = 0; j < jobs.size(); j++) {
                while (!Files.readString(outs.get(j)).startsWith("ready")) {
                    assertTrue(
                            processes.get(j).isAlive(),
                            "job " + j + " ended before it was ready: "
                                    + Files.readString(dir.resolve("job-" + j + ".err")));
                    assertTrue(System.nanoTime() < until, "job " + j + " not ready within 120 s");
                    Thread.sleep(5);
                }
            }
            Files.createFile(go);
            List<Job> done = new ArrayList<>();
            for (int j = 0; j < jobs.size(); j++) {
                Process p = processes.get(j);
                assertTrue(p.waitFor(180, TimeUnit.SECONDS), "job " + j + " still running after 180 s");
                String err = Files.readString(dir.resolve("job-" + j + ".err"));
                assertEquals(0, p.exitValue(), "job " + j + " failed: " + err);
                done.add(new Job(Files.readAllLines(outs.get(j))));
            }
            return done;
        } finally {
            for (Process p : processes) {
                p.destroyForcibly();
            }
        }
    }

    private static final Pattern RANGE = Pattern.compile("bytes=(\\d+)-(\\d+)");

    /** Body bytes asked for by GETs, by object path, as the proxy saw them. */
    static Map<String, Long> getBytesByObject(FaultProxy proxy) {
        Map<String, Long> bytes = new HashMap<>();
        for (FaultProxy.Seen s : proxy.seen()) {
            if (!s.method().equals("GET") || s.range() == null) {
                continue;
            }
            Matcher m = RANGE.matcher(s.range());
            assertTrue(m.matches(), s.range());
            String path = s.target().contains("?")
                    ? s.target().substring(0, s.target().indexOf('?'))
                    : s.target();
            int shard = Integer.parseInt(path.replaceAll(".*s-(\\d+)\\.tar", "$1"));
            long last = Math.min(Long.parseLong(m.group(2)), jobA.get(shard).length - 1);
            bytes.merge(path, last - Long.parseLong(m.group(1)) + 1, Long::sum);
        }
        return bytes;
    }
}
