package io.stoke.loader.cache;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fillers take only what the loader leaves: none copies while the loader's gate says its
 * workers are busy, all copy once it opens; a loader whose consumer reads nothing (its ring full)
 * fills the cache while it runs; each filler runs under SCHED_IDLE, as the kernel reports it; a
 * later loader's dataset takes the fillers over.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FillerPaceTest {
    @TempDir
    Path tmp;

    private final List<String> said = new CopyOnWriteArrayList<>();

    @BeforeEach
    void needsTheLibrary() {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
    }

    /** {@code n} baseline JPEGs in 2 classes. */
    private Path data(int n) throws IOException {
        Path root = tmp.resolve("data");
        SplittableRandom r = new SplittableRandom(3);
        for (int i = 0; i < n; i++) {
            Path dir = Files.createDirectories(root.resolve("c" + i % 2));
            int w = 48 + r.nextInt(200);
            int h = 48 + r.nextInt(150);
            byte[] jpeg = TestImages.jpeg(TestImages.rgb(w, h, i), w, h, 3, 88, TurboJpeg.TJSAMP_420, 0);
            Files.write(dir.resolve(String.format("i%02d.jpg", i)), jpeg);
        }
        return root;
    }

    private long entries() throws IOException {
        try (Stream<Path> s = Files.walk(tmp.resolve("cache"))) {
            return s.filter(p -> p.toString().endsWith(".stc")).count();
        }
    }

    /** Misses through a worker's reader: each one asks the fillers for its entry. */
    private static void readAll(RestartCache cache, Dataset d) {
        try (SampleReader reader = cache.reader(d, TransformSpec.defaults().maxFileBytes())) {
            for (int s = 0; s < d.size(); s++) {
                assertEquals(SampleStatus.OK, reader.read(s), reader.message());
                reader.done();
            }
        }
    }

    /** The live filler threads (their names start so, as CacheCommandTest looks for them). */
    private static long fillerThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith("stoke-cache-filler"))
                .count();
    }

    /**
     * The scheduling policy of each of this process's filler threads, as the kernel reports it:
     * field 41 of {@code /proc/self/task/TID/stat}, for each task whose name is a filler's (the
     * kernel keeps 15 bytes of the thread's name: {@code stoke-cache-fil}).
     */
    private static List<String> policies() {
        List<String> out = new ArrayList<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : tasks) {
                try {
                    if (Files.readString(task.resolve("comm")).strip().equals("stoke-cache-fil")) {
                        String stat = Files.readString(task.resolve("stat"));
                        out.add(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[41 - 3]);
                    }
                } catch (IOException gone) {
                    // the task ended while listed
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    /** Waits for {@code what} to hold (a filler thread that has yet to start, a worker yet to miss). */
    private static void await(java.util.function.BooleanSupplier what, Supplier<String> message)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!what.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, message);
            Thread.sleep(10);
        }
    }

    @Test
    void noFillerCopiesWhileTheGateIsClosedAndEveryRequestIsFilledOnceItOpens() throws Exception {
        Dataset d = ImageFolder.scan(data(12));
        AtomicBoolean slack = new AtomicBoolean();
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add)) {
            cache.pace(slack::get, () -> false, 3);
            readAll(cache, d);
            assertEquals(12, cache.stats().misses());
            // Closed: the fillers hold the 12 requests and copy none of them.
            assertFalse(cache.awaitFilled(500), "filled while the workers were busy");
            assertEquals(0, cache.stats().copied());
            assertEquals(0, entries());
            slack.set(true);
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(12, cache.stats().copied(), "each request copied once: " + cache.stats());
            assertEquals(12, entries());
            await(() -> fillerThreads() == 3, () -> "one filler per worker");
        }
        assertTrue(
                Thread.getAllStackTraces().keySet().stream()
                        .noneMatch(t -> t.isAlive() && t.getName().startsWith("stoke-cache-filler")),
                "a filler outlived close()");
        assertEquals(List.of(), said);
    }

    @Test
    void aLoaderWhoseConsumerReadsNothingFillsTheCacheWhileItRuns() throws Exception {
        Dataset d = ImageFolder.scan(data(30));
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add);
                Loader l = Loader.builder(d)
                        .transform(TransformSpec.defaults().withResize(32, 32))
                        .batchSize(4)
                        .workers(2)
                        .slots(2)
                        .epochs(0)
                        .restartCache(cache)
                        .build()) {
            // The two slots fill and the workers wait for a third: the fillers copy what they missed.
            await(() -> cache.stats().copied() >= 8, () -> "nothing copied while the ring was full: " + cache.stats());
            assertTrue(cache.awaitFilled(60_000));
            long misses = cache.stats().misses();
            assertTrue(misses >= 8, "two slots of 4 decoded: " + cache.stats());
            assertTrue(misses < 30, "the ring full stopped the workers before the epoch's end: " + cache.stats());
            assertEquals(misses, cache.stats().copied(), cache.stats().toString());
            assertEquals(misses, entries());
            await(() -> fillerThreads() == 2, () -> "one filler per worker");
            Iterator<Batch> it = l.iterator();
            try (Batch b = it.next()) {
                assertEquals(4, b.size());
            }
        }
        assertEquals(List.of(), said);
    }

    @Test
    void everyFillerRunsUnderSchedIdle() throws Exception {
        Assumptions.assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "NOT CHECKED: no /proc");
        Dataset d = ImageFolder.scan(data(4));
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add)) {
            cache.pace(() -> true, () -> false, 2);
            readAll(cache, d);
            assertTrue(cache.awaitFilled(60_000));
            // A filler's policy is set as it starts: wait for both to show it, then read it.
            await(() -> policies().equals(List.of("5", "5")), () -> "two fillers under SCHED_IDLE: " + policies());
            assertEquals(List.of("5", "5"), policies(), "SCHED_IDLE is 5, the kernel's own word");
        }
        assertEquals(List.of(), said);
    }

    @Test
    void theFillersFollowTheLatestLoadersDataset() throws Exception {
        Path other = Files.move(data(6), tmp.resolve("other"));
        Dataset second = ImageFolder.scan(data(6)); // the same files at other paths: other originals
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add)) {
            cache.pace(() -> true, () -> false, 2);
            readAll(cache, ImageFolder.scan(other)); // a first loader: its originals copied
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(6, cache.stats().copied(), cache.stats().toString());
            readAll(cache, second); // a later loader, over another dataset: 6 misses
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(12, cache.stats().copied(), "the later loader's originals: " + cache.stats());
            long hits = cache.stats().hits();
            readAll(cache, second);
            assertEquals(hits + 6, cache.stats().hits(), "every file of the later dataset copied: " + cache.stats());
        }
        assertEquals(List.of(), said);
    }

    @Test
    void entriesClearedByHandWhileItRunsAreMadeAgain() throws Exception {
        Dataset d = ImageFolder.scan(data(8));
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add)) {
            cache.pace(() -> true, () -> false, 1);
            readAll(cache, d);
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(8, entries());
            try (Stream<Path> s = Files.list(tmp.resolve("cache"))) {
                for (Path sub : s.filter(Files::isDirectory).toList()) {
                    try (Stream<Path> in = Files.list(sub)) {
                        for (Path e : in.toList()) {
                            Files.delete(e);
                        }
                    }
                    Files.delete(sub); // the entry folders this process made, gone
                }
            }
            readAll(cache, d);
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(8, entries(), "made again, folders and all: " + said);
        }
        assertEquals(List.of(), said);
    }
}
