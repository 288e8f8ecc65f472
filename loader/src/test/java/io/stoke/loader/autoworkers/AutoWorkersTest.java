package io.stoke.loader.autoworkers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.Workers;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The live tuner in the real pipeline, with a consumer that sleeps a set time per batch. */
class AutoWorkersTest {
    @TempDir
    static Path tmp;

    static Path data;

    @BeforeAll
    static void data() {
        data = TestImages.imageFolder(tmp.resolve("data"), 96, 4, 5);
    }

    private static Loader.Builder builder(Workers workers, long epochs) {
        return Loader.builder(ImageFolder.scan(data))
                .batchSize(12)
                .slots(4)
                .shuffle(true)
                .seed(3)
                .epochs(epochs)
                .transform(TransformSpec.defaults().withResize(36, 32))
                .workers(workers);
    }

    @Test
    void aSlowConsumerIsFedByOneWorkerAndToldWhy() throws InterruptedException {
        assumeTrue(Workers.availableCores() >= 2, "needs 2 cores to have a choice");
        try (Loader loader = builder(Workers.auto(2), 0).build()) {
            assertEquals(2, loader.workers());
            assertEquals(2, loader.activeWorkers(), "all workers at the start, for the first batch");
            for (int i = 0; i < 200 && loader.activeWorkers() > 1; i++) {
                loader.next().close();
                Thread.sleep(40); // a model step that one worker easily keeps up with
            }
            assertEquals(
                    1, loader.activeWorkers(), loader.autoWorkers().decisions().toString());
            WorkerChange d = loader.autoWorkers().decisions().get(0);
            assertEquals(2, d.fromWorkers());
            assertEquals(1, d.toWorkers());
            assertTrue(d.reason().contains("the consumer waited"), d.reason());
            assertFalse(loader.autoWorkers().windows().isEmpty());
            if (java.nio.file.Files.isDirectory(Path.of("/proc/self/task"))) {
                // The workers' clocks come from schedstat: CPU time, and a run-queue wait that is known.
                for (MeasuredWindow w : loader.autoWorkers().windows()) {
                    assertTrue(w.workerCpuNanos() > 0 && w.workerRunQueueNanos() >= 0, w.toString());
                    assertTrue(w.decodeCores() < 2.05, "at most the cores it has: " + w);
                }
            }
            // The parked worker takes nothing: the batches keep coming from the other.
            for (int i = 0; i < 20; i++) {
                loader.next().close();
                Thread.sleep(40);
            }
            assertEquals(
                    1, loader.activeWorkers(), loader.autoWorkers().decisions().toString());
            assertTrue(
                    loader.autoWorkers().recentStallFraction(3) < AutoWorkersRule.STALL_HIGH,
                    "the consumer hardly waits");
        }
    }

    @Test
    void aConsumerThatNeverComputesKeepsEveryWorker() {
        assumeTrue(Workers.availableCores() >= 2, "needs 2 cores to have a choice");
        try (Loader loader = builder(Workers.auto(2), 6).build()) {
            for (Batch b : loader) {
                b.close();
            }
            assertEquals(
                    2, loader.activeWorkers(), loader.autoWorkers().decisions().toString());
        }
    }

    @Test
    void changingTheWorkersChangesNoBatch() throws InterruptedException {
        List<long[]> fixed = run(Workers.fixed(2), 0);
        List<long[]> auto = run(Workers.auto(2), 30);
        assertEquals(fixed.size(), auto.size());
        for (int i = 0; i < fixed.size(); i++) {
            assertArrayEquals(fixed.get(i), auto.get(i), "batch " + i);
        }
    }

    /** Every batch of 5 epochs as (indices..., pixel CRC), the consumer sleeping {@code sleepMs} a batch. */
    private static List<long[]> run(Workers workers, int sleepMs) throws InterruptedException {
        List<long[]> out = new ArrayList<>();
        try (Loader loader = builder(workers, 5).build()) {
            for (Batch b : loader) {
                try (b) {
                    long[] row = new long[b.size() + 1];
                    for (int i = 0; i < b.size(); i++) {
                        row[i] = b.index(i);
                    }
                    CRC32 crc = new CRC32();
                    crc.update(b.pixels().asByteBuffer());
                    row[b.size()] = crc.getValue();
                    out.add(row);
                }
                Thread.sleep(sleepMs);
            }
            if (!workers.tuned()) {
                assertNull(loader.autoWorkers());
            } else {
                assertFalse(loader.autoWorkers().decisions().isEmpty(), "the workers changed during the run");
            }
            assertSame(loader.autoWorkers(), deprecatedTuning(loader), "the old name answers the same log");
        }
        return out;
    }

    @SuppressWarnings("removal")
    private static AutoWorkersLog deprecatedTuning(Loader loader) {
        return loader.tuning();
    }
}
