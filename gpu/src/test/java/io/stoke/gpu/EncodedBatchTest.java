package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.Nvjpeg;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.SampleReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A GPU batch's reads ({@link EncodedBatch#startReads}) on the reader threads, with nvJPEG's
 * examination on the test doubles (not a GPU verification): each thread claims the next unread
 * file, so a thread still busy with an earlier task (a progressive file of the last batch's CPU
 * round, 53 ms at worst on the H200's photographs) holds up none of this batch's files; each file
 * is handed to nvJPEG from where its reader put it.
 */
class EncodedBatchTest {
    static final int FILES = 12;

    CudaTestDouble dbl;
    CudaDriver driver;
    Nvjpeg nvjpeg;
    CudaContext context;
    Arena arena;
    final List<MemorySegment> files = new ArrayList<>();

    @BeforeEach
    void open() {
        dbl = NvjpegDoubles.open("GPU decode");
        driver = dbl.driver();
        nvjpeg = dbl.nvjpeg();
        context = CudaContext.retainPrimary(driver, 0);
        arena = Arena.ofShared();
        for (int i = 0; i < FILES; i++) {
            files.add(jpeg(16 + 8 * i, 24 + 4 * (i % 5), i));
        }
    }

    @AfterEach
    void close() {
        if (dbl == null) {
            return;
        }
        try {
            context.close();
            arena.close();
            NvjpegDoubles.assertNoneLive(dbl);
        } finally {
            dbl.reset();
        }
    }

    /**
     * With one of two reader threads held by an earlier task, the other reads the whole batch and
     * the batch is read; each file nvJPEG is given is the sample's, at its size. The batch read
     * again (the next use of its buffers) while the thread is still held is read the same way, and
     * the held thread's tasks, once it is let go, find nothing left to claim and change nothing.
     */
    @Test
    void aThreadBusyWithAnEarlierTaskHoldsUpNoFileOfTheBatch() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Doorbell doorbell = new Doorbell();
        try (GpuJpegDecoder jpeg = GpuJpegDecoder.open(driver, nvjpeg, false, FILES, 1 << 20);
                EncodedBatch batch = new EncodedBatch(FILES, 2, doorbell);
                ReaderThreads threads = new ReaderThreads(2, FileList::new, () -> null, doorbell)) {
            GpuJpegDecoder.Examiner[] examiners = examiners(jpeg, threads);
            hold(threads, 1, release); // the round's slowest progressive file
            ReaderClock clock = new ReaderClock();
            int[] first = {11, 3, 7, 0, 5, 9, 1, 10, 2, 8, 6, 4};
            int[] second = {2, 4, 6, 8, 10, 0, 1, 3, 5, 7, 9, 11};
            try {
                for (int[] order : new int[][] {first, second}) {
                    batch.begin(0, 0, order, 0, FILES, false);
                    batch.startReads(threads, examiners, null, clock);
                    awaitRead(batch, "thread 1 held");
                    assertEquals(1, release.getCount(), "thread 1 still held");
                    handAll(batch);
                    assertFiles(batch, order);
                }
            } finally {
                release.countDown(); // else closing the threads waits for thread 1 for ever
            }
            batch.drainReads(); // thread 1's two tasks: both find the batch read
            assertFiles(batch, second);
            assertEquals(2L * FILES, clock.times().images(), "each file read once, none by the late tasks");
        }
    }

    /**
     * A task claims at most twice its share of the batch, which bounds a reader's buffer: with three
     * of four threads held, the free one reads 6 of the 12 files and stops; the rest wait for the
     * held threads, and the batch is read once they are let go.
     */
    @Test
    void aTaskClaimsAtMostTwiceItsShare() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Doorbell doorbell = new Doorbell();
        try (GpuJpegDecoder jpeg = GpuJpegDecoder.open(driver, nvjpeg, false, FILES, 1 << 20);
                EncodedBatch batch = new EncodedBatch(FILES, 4, doorbell);
                ReaderThreads threads = new ReaderThreads(4, FileList::new, () -> null, doorbell)) {
            GpuJpegDecoder.Examiner[] examiners = examiners(jpeg, threads);
            ReaderClock clock = new ReaderClock();
            int[] order = {5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6};
            try {
                for (int r = 1; r < 4; r++) {
                    hold(threads, r, release);
                }
                batch.begin(0, 0, order, 0, FILES, false);
                batch.startReads(threads, examiners, null, clock);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (clock.times().images() < 6) { // thread 0's task, once it has ended
                    assertTrue(System.nanoTime() < deadline, "thread 0 did not read its 6 files within 10 s");
                    Thread.sleep(1);
                }
                Thread.sleep(50);
                assertEquals(6, clock.times().images(), "thread 0 claimed twice its share and stopped");
                assertFalse(batch.readsDone(), "6 files wait for the held threads");
            } finally {
                release.countDown();
            }
            awaitRead(batch, "the held threads let go");
            handAll(batch);
            assertFiles(batch, order);
            batch.drainReads();
            assertEquals(FILES, clock.times().images());
        }
    }

    /** A reader that fails unexpectedly ends the batch's reads, and the failure is thrown to the decode thread. */
    @Test
    void aReaderThatFailsEndsTheReadsWithItsFailure() throws Exception {
        Doorbell doorbell = new Doorbell();
        try (GpuJpegDecoder jpeg = GpuJpegDecoder.open(driver, nvjpeg, false, FILES, 1 << 20);
                EncodedBatch batch = new EncodedBatch(FILES, 2, doorbell);
                ReaderThreads threads = new ReaderThreads(2, FailingOn7::new, () -> null, doorbell)) {
            GpuJpegDecoder.Examiner[] examiners = examiners(jpeg, threads);
            int[] order = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
            batch.begin(0, 0, order, 0, FILES, true);
            batch.startReads(threads, examiners, null, new ReaderClock());
            awaitRead(batch, "a reader failed");
            IllegalStateException e = assertThrows(IllegalStateException.class, batch::checkReads);
            assertEquals("the store went away at sample 7", e.getMessage());
            batch.drainReads();
        }
    }

    /**
     * An examiner per reader thread, each thread with the context current, as the stage makes them.
     * (In each test the threads close first, their tasks ended, then the batch's buffers, then nvJPEG.)
     */
    private GpuJpegDecoder.Examiner[] examiners(GpuJpegDecoder jpeg, ReaderThreads threads) throws Exception {
        GpuJpegDecoder.Examiner[] examiners = new GpuJpegDecoder.Examiner[threads.size()];
        for (int r = 0; r < examiners.length; r++) {
            examiners[r] = jpeg.newExaminer();
            threads.submit(r, (reader, transform) -> context.makeCurrent()).get();
        }
        return examiners;
    }

    /** Holds thread {@code r} with an urgent task (a CPU round's) until {@code release} opens. */
    private static void hold(ReaderThreads threads, int r, CountDownLatch release) {
        threads.submitFirst(r, (reader, transform) -> {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    private static void awaitRead(EncodedBatch batch, String why) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!batch.readsDone()) {
            assertTrue(System.nanoTime() < deadline, "the batch was not read within 10 s (" + why + ")");
            Thread.sleep(1);
        }
    }

    /** Hands every position to nvJPEG, as the decode thread does once the batch is read. */
    private static void handAll(EncodedBatch batch) {
        batch.checkReads();
        assertEquals(0, batch.count());
        for (int i = 0; i < FILES; i++) {
            assertSame(SampleStatus.OK, batch.status[i]);
            assertTrue(batch.jpeg[i], "position " + i + " is a JPEG");
            batch.hand(i);
        }
    }

    /** What nvJPEG would be given: each position's file as the sample's, and its examined size. */
    private void assertFiles(EncodedBatch batch, int[] order) {
        assertEquals(FILES, batch.count());
        for (int j = 0; j < FILES; j++) {
            MemorySegment want = files.get(order[j]);
            assertNull(batch.why(j), "position " + j);
            assertEquals(want.byteSize(), batch.length(j), "position " + j);
            assertEquals(16 + 8 * order[j], batch.width(j), "position " + j);
            assertEquals(24 + 4 * (order[j] % 5), batch.height(j), "position " + j);
            byte[] got = MemorySegment.ofAddress(batch.address(j))
                    .reinterpret(batch.length(j))
                    .toArray(JAVA_BYTE);
            assertArrayEquals(want.toArray(JAVA_BYTE), got, "position " + j + ": sample " + order[j] + "'s file");
        }
    }

    /** A JPEG of a pattern, {@code w x h}, in the shared arena. */
    private MemorySegment jpeg(int w, int h, long seed) {
        MemorySegment rgb = arena.allocate(3L * w * h);
        for (long p = 0; p < rgb.byteSize(); p++) {
            rgb.set(JAVA_BYTE, p, (byte) (p * 7 + seed * 31));
        }
        try (JpegCompressor c = new JpegCompressor()) {
            MemorySegment out = arena.allocate(JpegCompressor.maxSize(w, h, TurboJpeg.TJSAMP_420));
            long n = c.compress(rgb, w, 3 * w, h, TurboJpeg.TJPF_RGB, TurboJpeg.TJSAMP_420, 90, 0, out);
            return out.asSlice(0, n);
        }
    }

    /** A reader thread's reader of the test's files, by sample. */
    private class FileList implements SampleReader {
        MemorySegment last;

        @Override
        public SampleStatus read(int sample) {
            last = files.get(sample);
            return SampleStatus.OK;
        }

        @Override
        public MemorySegment bytes() {
            return last;
        }

        @Override
        public long length() {
            return last.byteSize();
        }

        @Override
        public String message() {
            return null;
        }

        @Override
        public void close() {}
    }

    /** As {@link FileList}, failing unexpectedly (not a bad file: a fault of the reader itself) at sample 7. */
    private class FailingOn7 extends FileList {
        @Override
        public SampleStatus read(int sample) {
            if (sample == 7) {
                throw new IllegalStateException("the store went away at sample 7");
            }
            return super.read(sample);
        }
    }
}
