package io.stoke.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.RingConsumer;
import io.stoke.loader.autoworkers.AutoWorkersLog;
import io.stoke.loader.autoworkers.WorkerChange;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.testing.TestImages;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server's side files, each written by its class and read back by its reader against the
 * dataset itself, and a whole run of the server into a ring that a consumer in this process drains.
 */
class SideFilesTest {
    @Test
    void theSampleListNamesEverySampleInDatasetOrder(@TempDir Path tmp) throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("data"), 9, 3, 5);
        Path file = tmp.resolve("samples.json");
        try (Dataset dataset = LoaderSetup.openFailing(root)) {
            SampleList.write(dataset, 0, file);
            SampleList list = SampleList.read(file);
            assertEquals(9, list.samples());
            assertTrue(list.listed());
            assertEquals(dataset.fingerprint(), list.dataset());
            for (int i = 0; i < dataset.size(); i++) {
                assertEquals(
                        new SampleList.Entry(dataset.name(i), dataset.label(i)),
                        list.entries().get(i));
            }
        }
        assertTrue(Files.readAllLines(file).getFirst().startsWith("{\"samples\":9,\"listed\":true,"));
        SampleList.remove(file);
        assertFalse(Files.exists(file));
    }

    @Test
    void theAutoWorkersLogAppendsEachChangeOnceAsTheLineThePythonPackageReads(@TempDir Path tmp) throws Exception {
        AutoWorkersLog tuning = new AutoWorkersLog(8, 2);
        Path file = tmp.resolve("auto-workers.jsonl");
        AutoWorkersLogFile log = new AutoWorkersLogFile(tuning, file, "test: ");
        StringWriter said = new StringWriter();
        PrintWriter err = new PrintWriter(said);
        tuning.decision(new WorkerChange(1, 1_500_000_000L, 2, 3, false, false, "the consumer waited", null));
        log.report(err);
        log.report(err); // nothing new: nothing said or written again
        tuning.decision(new WorkerChange(2, 3_000_000_000L, 3, 2, false, false, "the workers idled", null));
        log.report(err);
        assertEquals(
                List.of(
                        "{\"at_s\":1.5,\"from_workers\":2,\"to_workers\":3,\"reason\":\"the consumer waited\"}",
                        "{\"at_s\":3.0,\"from_workers\":3,\"to_workers\":2,\"reason\":\"the workers idled\"}"),
                Files.readAllLines(file));
        assertEquals(
                List.of(
                        new AutoWorkersLogFile.Change(1.5, 2, 3, "the consumer waited"),
                        new AutoWorkersLogFile.Change(3.0, 3, 2, "the workers idled")),
                AutoWorkersLogFile.read(file));
        assertEquals(
                2, said.toString().lines().filter(l -> l.startsWith("test: ")).count());
    }

    @Test
    void theServerServesEveryBatchToAConsumerThenRemovesItsFiles(@TempDir Path tmp) throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("data"), 10, 2, 7);
        Path ring = Path.of(
                "/dev/shm", "stoke-serve-test-" + ProcessHandle.current().pid());
        Path samples = tmp.resolve("samples.json");
        LoaderSettings settings = LoaderSettings.defaults()
                .set("batch_size", "4")
                .set("resize", "16")
                .set("crop", "16")
                .set("workers", "2");
        StringWriter said = new StringWriter();
        int[] rc = {-1};
        Thread server = Thread.ofPlatform().start(() -> {
            try {
                rc[0] = new RingServer(root.toString(), settings, ring, new PrintWriter(said, true))
                        .statusInterval(0)
                        .parentPid(ProcessHandle.current().pid())
                        .sampleList(samples)
                        .run();
            } catch (Exception e) {
                said.append(e.toString());
            }
        });
        RingConsumer consumer = null;
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (consumer == null) {
            try {
                consumer = RingConsumer.attach(ring);
            } catch (RuntimeException notYet) {
                assertTrue(System.nanoTime() < deadline && server.isAlive(), said.toString());
                Thread.sleep(5);
            }
        }
        assertEquals(10, SampleList.read(samples).entries().size(), "written before the ring is ready");
        List<Integer> sizes = new ArrayList<>();
        try (RingConsumer attached = consumer) {
            for (var b : attached) {
                sizes.add(b.size());
                b.close();
            }
        }
        server.join(30_000);
        assertEquals(0, rc[0], said.toString());
        assertEquals(List.of(4, 4, 2), sizes);
        assertTrue(said.toString().contains("ready: 10 images"), said.toString());
        assertFalse(said.toString().contains("restart cache"), "nothing said of a cache there is not");
        assertFalse(Files.exists(ring), "the ring is removed at the end");
        assertFalse(Files.exists(samples), "the sample list lives as long as the ring");
    }

    @Test
    void aServerWithARestartCacheSaysEachEpochOnceAndItsLogReadsBackTheSame(@TempDir Path tmp) throws Exception {
        Assumptions.assumeTrue(RestartCache.whyNoCopies() == null, () -> "NOT CHECKED: " + RestartCache.whyNoCopies());
        Path root = TestImages.imageFolder(tmp.resolve("data"), 10, 2, 7);
        Path ring = Path.of(
                "/dev/shm", "stoke-serve-cache-test-" + ProcessHandle.current().pid());
        Path log = tmp.resolve("restart-cache.jsonl");
        LoaderSettings settings = LoaderSettings.defaults()
                .set("batch_size", "4")
                .set("resize", "16")
                .set("crop", "16")
                .set("workers", "2")
                .set("epochs", "3")
                .set("restart_cache_dir", tmp.resolve("cache").toString());
        StringWriter said = new StringWriter();
        int[] rc = {-1};
        Thread server = Thread.ofPlatform().start(() -> {
            try {
                rc[0] = new RingServer(root.toString(), settings, ring, new PrintWriter(said, true))
                        .statusInterval(0)
                        .parentPid(ProcessHandle.current().pid())
                        .restartCacheLog(log)
                        .run();
            } catch (Exception e) {
                said.append(e.toString());
            }
        });
        RingConsumer consumer = null;
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (consumer == null) {
            try {
                consumer = RingConsumer.attach(ring);
            } catch (RuntimeException notYet) {
                assertTrue(System.nanoTime() < deadline && server.isAlive(), said.toString());
                Thread.sleep(5);
            }
        }
        int images = 0;
        try (RingConsumer attached = consumer) {
            for (var b : attached) {
                images += b.size();
                b.close();
            }
        }
        server.join(30_000);
        assertEquals(0, rc[0], said.toString());
        assertEquals(30, images);
        List<RestartCacheLogFile.Epoch> epochs = RestartCacheLogFile.read(log);
        assertEquals(
                List.of(0L, 1L, 2L),
                epochs.stream().map(RestartCacheLogFile.Epoch::epoch).toList());
        RestartCacheLogFile.Epoch last = epochs.getLast();
        // Every read of the three epochs is counted once, in one epoch or the next (workers run ahead).
        assertEquals(30, last.totalHits() + last.totalMisses(), last.toString());
        assertEquals(30, epochs.stream().mapToLong(e -> e.hits() + e.misses()).sum());
        assertTrue(epochs.getFirst().misses() >= 10, "the first epoch found an empty folder: " + epochs);
        assertEquals(
                last.totalCopied(),
                epochs.stream().mapToLong(RestartCacheLogFile.Epoch::copied).sum());
        assertEquals(
                last.totalCopiedByWorkers(),
                epochs.stream()
                        .mapToLong(RestartCacheLogFile.Epoch::copiedByWorkers)
                        .sum());
        for (RestartCacheLogFile.Epoch e : epochs) {
            assertTrue(e.copiedByWorkers() <= e.copied(), "the workers' copies are part of the copies: " + e);
        }
        assertEquals(
                last.totalFilledBytes(),
                epochs.stream()
                        .mapToLong(RestartCacheLogFile.Epoch::filledBytes)
                        .sum());
        List<String> lines = said.toString()
                .lines()
                .filter(l -> l.startsWith("stoke serve: restart cache after epoch "))
                .toList();
        assertEquals(3, lines.size(), said.toString());
        for (int e = 0; e < 3; e++) {
            RestartCacheLogFile.Epoch r = epochs.get(e);
            assertTrue(
                    lines.get(e)
                            .startsWith("stoke serve: restart cache after epoch " + e + ": " + r.hits() + " hits, "
                                    + r.misses() + " misses, " + r.copied() + " copied ("),
                    lines.get(e) + " against " + r);
            assertTrue(
                    lines.get(e).contains("; " + r.copiedByWorkers() + " by the workers as they decoded)"),
                    lines.get(e) + " against " + r);
        }
        assertTrue(Files.readAllLines(log).getFirst().startsWith("{\"epoch\":0,\"hits\":"), log.toString());
        for (String line : Files.readAllLines(log)) {
            assertTrue(line.endsWith(",\"full\":false,\"failure\":null}"), "a folder it writes: " + line);
        }
    }
}
