package io.stoke.loader.cache;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A loader's per-epoch restart-cache counts against what the epochs read: one batch per epoch in a
 * one-slot ring, so no worker reads the next epoch before the consumer lets the batch go, and the
 * counts of each epoch are exactly its own (12 misses, then 12 hits); the copies and their bytes
 * add up to the folder's.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RestartCacheEpochsTest {
    @TempDir
    Path tmp;

    @Test
    void eachEpochSaysItsHitsMissesAndCopiesAndTheLoaderStatsCarryTheTotals() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path root = TestImages.imageFolder(tmp.resolve("data"), 12, 3, 4);
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, s -> fail(s));
                Loader l = Loader.builder(ImageFolder.scan(root))
                        .transform(TransformSpec.defaults().withResize(32, 32))
                        .batchSize(12)
                        .slots(1)
                        .workers(2)
                        .epochs(2)
                        .restartCache(cache)
                        .build()) {
            assertEquals(List.of(), l.restartCacheEpochs(), "no epoch ended yet");
            try (Batch b = l.next()) {
                assertEquals(0, b.epoch());
                List<RestartCacheEpochs.Epoch> epochs = l.restartCacheEpochs();
                assertEquals(1, epochs.size(), epochs.toString());
                RestartCacheEpochs.Epoch first = epochs.getFirst();
                assertEquals(0, first.epoch());
                assertEquals(12, first.misses(), first.toString());
                assertEquals(0, first.hits(), first.toString());
                assertTrue(
                        first.sentence().startsWith("restart cache after epoch 0: 0 hits, 12 misses, "),
                        first.sentence());
                assertTrue(cache.awaitFilled(60_000)); // before the batch goes: epoch 1 reads the copies
            }
            try (Batch b = l.next()) {
                assertEquals(1, b.epoch());
            }
            assertNull(l.next());
            List<RestartCacheEpochs.Epoch> epochs = l.restartCacheEpochs();
            assertEquals(2, epochs.size(), epochs.toString());
            RestartCacheEpochs.Epoch first = epochs.get(0);
            RestartCacheEpochs.Epoch second = epochs.get(1);
            assertEquals(1, second.epoch());
            assertEquals(12, second.hits(), second.toString());
            assertEquals(0, second.misses(), second.toString());
            RestartCache.Stats total = cache.stats();
            assertEquals(12, total.copied(), total.toString());
            assertEquals(total.copied(), first.copied() + second.copied(), "every copy counted in one epoch");
            assertEquals(total.filledBytes(), first.filledBytes() + second.filledBytes());
            assertEquals(total.usedBytes(), total.filledBytes(), "a new folder holds what this process filed");
            assertEquals(total, second.total(), "the filler had nothing left after epoch 0");
            assertEquals(total, l.stats().restartCache(), "the loader's stats carry the cache's");
            // The copies fall in whichever epoch's end came after the filler filed them.
            assertTrue(
                    second.sentence()
                            .startsWith(
                                    "restart cache after epoch 1: 12 hits, 0 misses, " + second.copied() + " copied ("),
                    second.sentence());
            assertTrue(
                    second.sentence()
                            .contains(" this epoch; 12 hits, 12 misses, 12 copied this run; the folder" + " holds "),
                    second.sentence());
        }
    }

    /**
     * A process that writes nothing still says what the folder holds (the count's file as it stands:
     * every read a hit, or a folder it cannot write), and a folder that fails says why, not "full".
     */
    @Test
    void aCacheThatWritesNothingSaysTheFoldersBytesAndAFailedOneSaysWhy() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path root = TestImages.imageFolder(tmp.resolve("data"), 12, 3, 4);
        Path dir = tmp.resolve("cache");
        long used;
        try (RestartCache cache = RestartCache.open(dir, 1L << 30, s -> fail(s))) {
            cache.fill(ImageFolder.scan(root), 2, n -> {});
            used = cache.stats().usedBytes();
            assertEquals(12, cache.stats().copied(), cache.stats().toString());
        }
        try (RestartCache cache = RestartCache.open(dir, 1L << 30, s -> fail(s));
                Loader l = loader(root, 1, cache)) {
            drain(l);
            RestartCacheEpochs.Epoch only = l.restartCacheEpochs().getFirst();
            assertEquals(12, only.hits(), only.toString());
            assertEquals(used, only.total().usedBytes(), "the folder's count, though this process wrote nothing");
            assertTrue(only.sentence().endsWith("the folder holds " + kib(used) + " KiB of 1.0 GiB"), only.sentence());
        }

        // The count's file cannot be made (a folder in its place, as a read-only mount or a full disk
        // refuses it): the fillers' first write fails, and the next epoch's line says why.
        Path failing = tmp.resolve("failing");
        Files.createDirectories(failing.resolve(FolderUsage.NAME));
        List<String> said = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (RestartCache cache = RestartCache.open(failing, 1L << 30, said::add);
                Loader l = loader(root, 2, cache)) {
            try (Batch b = l.next()) {
                assertEquals(0, b.epoch());
                assertTrue(cache.awaitFilled(60_000)); // the consumer holds the batch: the fillers have slack
            }
            drain(l);
            RestartCacheEpochs.Epoch second = l.restartCacheEpochs().get(1);
            String failure = second.total().failure();
            assertNotNull(failure, second.toString());
            assertFalse(second.total().full(), second.toString());
            assertTrue(second.sentence().endsWith("; it writes nothing more (" + failure + ")"), second.sentence());
            assertFalse(second.sentence().contains("(full)"), second.sentence());
        }
        assertEquals(1, said.size(), said.toString());
        assertTrue(said.getFirst().contains("cannot use " + failing), said.toString());
    }

    /**
     * An epoch that filed fewer than a tenth of its misses is told where the copies come from (a
     * loader-bound job makes few); not one that filed more, nor once the cache is full or failed.
     */
    @Test
    void anEpochThatCopiedFewOfItsMissesIsToldWhereCopiesComeFrom() {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        RestartCache.Stats total = new RestartCache.Stats(0, 600, 2, 2, 0, 0, 9000, false, 9000, 1L << 36, null);
        for (long[] few : new long[][] {{300, 0, 0}, {300, 29, 0}, {300, 20, 9}}) {
            String said = new RestartCacheEpochs.Epoch(1, 0, few[0], few[1], 0, few[2], 0, 0, total).sentence();
            assertTrue(said.endsWith("of 64.0 GiB" + RestartCacheEpochs.Epoch.FEW_COPIED), said);
        }
        for (long[] enough : new long[][] {{300, 30, 0}, {300, 20, 10}, {0, 0, 0}}) {
            String line =
                    new RestartCacheEpochs.Epoch(1, 300, enough[0], enough[1], 0, enough[2], 0, 0, total).sentence();
            assertFalse(line.contains("few copied"), line);
        }
        for (RestartCache.Stats stopped : List.of(
                new RestartCache.Stats(0, 600, 2, 0, 0, 0, 1L << 36, true, 0, 1L << 36, null),
                new RestartCache.Stats(0, 600, 2, 0, 0, 0, 9000, false, 0, 1L << 36, "x: Read-only file system"))) {
            String line = new RestartCacheEpochs.Epoch(1, 0, 300, 0, 0, 0, 0, 0, stopped).sentence();
            assertFalse(line.contains("few copied"), line);
        }
    }

    private static Loader loader(Path root, long epochs, RestartCache cache) {
        return Loader.builder(ImageFolder.scan(root))
                .transform(TransformSpec.defaults().withResize(32, 32))
                .batchSize(12)
                .slots(1)
                .workers(2)
                .epochs(epochs)
                .restartCache(cache)
                .build();
    }

    private static void drain(Loader l) {
        for (Batch b; (b = l.next()) != null; ) {
            b.close();
        }
    }

    private static String kib(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.1f", bytes / 1024.0);
    }

    @Test
    void aLoaderWithoutACacheHasNoCounts() throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("data"), 4, 2, 4);
        try (Loader l = Loader.builder(ImageFolder.scan(root))
                .transform(TransformSpec.defaults().withResize(32, 32))
                .batchSize(4)
                .epochs(1)
                .build()) {
            for (Batch b : l) {
                b.close();
            }
            assertEquals(List.of(), l.restartCacheEpochs());
            assertNull(l.stats().restartCache());
        }
    }

    @Test
    void twoLoadersInTurnOnOneCacheEachCountTheirOwnEpochs() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path root = TestImages.imageFolder(tmp.resolve("data"), 12, 3, 4);
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, s -> fail(s))) {
            for (int run = 0; run < 2; run++) {
                try (Loader l = Loader.builder(ImageFolder.scan(root))
                        .transform(TransformSpec.defaults().withResize(32, 32))
                        .batchSize(12)
                        .slots(1)
                        .workers(2)
                        .epochs(1)
                        .restartCache(cache)
                        .build()) {
                    try (Batch b = l.next()) {
                        assertEquals(0, b.epoch());
                    }
                    assertNull(l.next());
                    List<RestartCacheEpochs.Epoch> epochs = l.restartCacheEpochs();
                    assertEquals(1, epochs.size(), "run " + run + ": " + epochs);
                    RestartCacheEpochs.Epoch only = epochs.getFirst();
                    assertEquals(run == 0 ? 12 : 0, only.misses(), "run " + run + ": " + only);
                    assertEquals(run == 0 ? 0 : 12, only.hits(), "run " + run + ": " + only);
                }
                assertTrue(cache.awaitFilled(60_000), "run " + run);
            }
            assertEquals(12, cache.stats().copied(), cache.stats().toString());
        }
    }
}
