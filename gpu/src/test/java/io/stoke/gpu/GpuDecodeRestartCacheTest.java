package io.stoke.gpu;

import static io.stoke.gpu.GpuDecodeStageTest.EVAL;
import static io.stoke.gpu.GpuDecodeStageTest.assertInOrderWithPixels;
import static io.stoke.gpu.GpuDecodeStageTest.host;
import static io.stoke.gpu.GpuDecodeStageTest.writeDataset;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.Loader;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.cache.RestartCacheEpochs;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GPU decode stage through a restart cache, on the CUDA and nvJPEG doubles (the "GPU" is libjpeg
 * on a host thread: this checks the wiring, not a GPU). The host loader over the originals, without
 * a cache, is the reference: a copy holds its original's coefficients, so every pixel must be the
 * same.
 */
class GpuDecodeRestartCacheTest extends StageOnDoubles {
    @BeforeEach
    void copiesCanBeMade() {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
    }

    /**
     * From an empty folder, as a user starts: the first run reads the originals, so the engine leaves
     * the progressive JPEG to the CPU, and the cache fills from the reader threads' idle time. The
     * second run is served the copies: the progressive JPEG's is sequential, the engine takes it, and
     * only the PNG and the CMYK JPEG are left to the CPU. Both runs are the host loader's batches,
     * in its order, with its pixels; each epoch's cache counts are said as the loader says them.
     */
    @Test
    void theEngineTakesAProgressiveJpegsCopyAndEveryPixelIsTheOriginalsFromAnEmptyCacheOn(@TempDir Path cacheDir)
            throws Exception {
        assertNotEquals(root, cacheDir, "the cache is not a folder of the dataset");
        writeDataset(root, 13); // 10 baseline JPEGs, a progressive one, a PNG and a CMYK JPEG
        dbl.nvjpegHardware(true); // the engine refuses progressive files
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(true)
                .seed(7)
                .epochs(2)
                .workers(1)
                .transform(EVAL);
        List<GpuDecodeStageTest.Snapshot> want = host(settings);
        try (RestartCache cache = RestartCache.open(cacheDir, 1L << 30, line -> {})) {
            settings.restartCache(cache);
            List<RestartCacheEpochs.Epoch> epochs = new ArrayList<>();
            GpuDecodeStats cold = runOnTheEngine(settings, want, epochs);
            assertEquals(
                    List.of(0L, 1L),
                    epochs.stream().map(RestartCacheEpochs.Epoch::epoch).toList(),
                    "an epoch's counts at its last batch");
            // The progressive JPEG went to the CPU at least in the first epoch: its copy may have
            // been filed before the second.
            assertEquals(2 * 13, cold.gpuImages() + cold.cpuImages(), cold.toString());
            assertTrue(cold.cpuImages() >= 2 * 2 + 1, cold.toString());
            assertTrue(cache.awaitFilled(30_000), "the fillers handled every miss: " + cache.stats());
            RestartCache.Stats filled = cache.stats();
            assertEquals(11, filled.copied(), "the baseline and the progressive JPEGs copied: " + filled);
            assertNull(filled.failure(), filled.toString());
            assertEquals(0, filled.copiedByWorkers(), "the fillers copy every miss, never a reader thread: " + filled);

            epochs.clear();
            GpuDecodeStats warm = runOnTheEngine(settings, want, epochs);
            assertEquals(2 * 11, warm.gpuImages(), "the engine takes the progressive JPEG's copy: " + warm);
            assertEquals(2 * 2, warm.cpuImages(), "the PNG and the CMYK JPEG alone are left: " + warm);
            // The readers run ahead of the hand-out, so an epoch's line may hold the next one's reads:
            // summed, each of the 11 copies is served at least once an epoch (the CMYK JPEG's entry,
            // which says to read the original, counts as a hit too; the PNG, never cached, as a miss).
            assertEquals(
                    List.of(0L, 1L),
                    epochs.stream().map(RestartCacheEpochs.Epoch::epoch).toList());
            long hits =
                    epochs.stream().mapToLong(RestartCacheEpochs.Epoch::hits).sum();
            assertTrue(hits >= 2 * 11, "every copy served each epoch: " + epochs);
            assertEquals(
                    0,
                    epochs.stream().mapToLong(RestartCacheEpochs.Epoch::copied).sum(),
                    epochs.toString());
        }
    }

    /** With the CPU sharing the JPEGs and whole batches, the copies it is served give the originals' pixels. */
    @Test
    void underAutoTheCpusShareOfTheCopiesGivesTheOriginalsPixels(@TempDir Path cacheDir) throws Exception {
        writeDataset(root, 13);
        TransformSpec spec = EVAL;
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(true)
                .seed(3)
                .epochs(2)
                .workers(1)
                .transform(spec);
        List<GpuDecodeStageTest.Snapshot> want = host(settings);
        try (RestartCache cache = RestartCache.open(cacheDir, 1L << 30, line -> {})) {
            cache.fill(settings.dataset(), 1, done -> {});
            settings.restartCache(cache);
            try (GpuDecodeStage stage = stage(settings)
                    .inFlight(2)
                    .readers(3)
                    .shareWithCpu(true)
                    .wholeEveryOther()
                    .build()) {
                GpuDecodeStats s = drainAgainst(stage, want, spec);
                assertTrue(s.cpuBatches() > 0, "whole batches went to the CPU: " + s);
            }
            RestartCache.Stats stats = cache.stats();
            assertTrue(stats.hits() > 0, stats.toString());
            assertEquals(0, stats.damaged(), stats.toString());
        }
    }

    /** A stage over {@code settings} on the engine: every batch {@code want}'s; its cache epochs into {@code epochs}. */
    private GpuDecodeStats runOnTheEngine(
            Loader.Builder settings, List<GpuDecodeStageTest.Snapshot> want, List<RestartCacheEpochs.Epoch> epochs) {
        try (GpuDecodeStage stage = stage(settings).inFlight(2).readers(3).build()) {
            assertEquals(GpuJpegDecoder.Backend.HARDWARE, stage.backend());
            GpuDecodeStats s = drainAgainst(stage, want, EVAL);
            epochs.addAll(stage.restartCacheEpochs());
            return s;
        }
    }

    /** Every batch of {@code stage} is {@code want}'s, in order, with its pixels; then none. */
    private static GpuDecodeStats drainAgainst(
            GpuDecodeStage stage, List<GpuDecodeStageTest.Snapshot> want, TransformSpec spec) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(4L * spec.sampleBytes());
            for (int k = 0; k < want.size(); k++) {
                try (DeviceBatch b = stage.next()) {
                    assertNotNull(b, "batch " + k);
                    assertInOrderWithPixels(k, want.get(k), b, got);
                    assertTrue(b.skipped().isEmpty());
                }
            }
            assertNull(stage.next());
            GpuDecodeStats s = stage.stats();
            assertEquals(0, s.failed(), s.toString());
            return s;
        }
    }
}
