package io.stoke.loader.autoworkers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.LibC;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The workers' clock at the end of a run, when a worker has ended and its {@code schedstat} file is
 * gone with it: the auto-workers thread's last window read such a worker, and said that /proc could
 * not be read, which was not so (a run of one batch over two shards printed it).
 */
class ThreadClockTest {
    @Test
    void anEndedWorkerKeepsItsLastReadingAndIsNoWarning() throws Exception {
        assumeTrue(Files.exists(Path.of("/proc/self/task")), "Linux's /proc");
        PrintStream err = System.err;
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        System.setErr(new PrintStream(said, true, StandardCharsets.UTF_8));
        try (ThreadClock clock = new ThreadClock(2)) {
            AtomicInteger tid = new AtomicInteger();
            CountDownLatch ran = new CountDownLatch(1);
            CountDownLatch end = new CountDownLatch(1);
            Thread worker = new Thread(() -> {
                tid.set(LibC.gettid());
                // 20 ms of its own CPU time to read, however busy the machine is.
                java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
                long x = 0;
                while (cpu.getCurrentThreadCpuTime() < 20_000_000L) {
                    x += x * 31 + 7;
                }
                ran.countDown();
                try {
                    end.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            worker.start();
            ran.await();
            long[] alive = new long[2];
            clock.read(0, tid.get(), worker, alive);
            assertTrue(alive[0] >= 10_000_000L && alive[1] >= 0, "run " + alive[0] + " ns, wait " + alive[1] + " ns");
            end.countDown();
            worker.join();
            awaitGone(tid.get());
            long[] ended = new long[2];
            clock.read(0, tid.get(), worker, ended);
            assertEquals(alive[0], ended[0], "an ended worker's CPU time is its last reading, not 0");
            assertEquals(alive[1], ended[1]);

            // One that ended before its first reading: what is left of it (the JVM keeps no CPU time
            // of an ended thread), quietly.
            AtomicInteger brief = new AtomicInteger();
            Thread gone = new Thread(() -> brief.set(LibC.gettid()));
            gone.start();
            gone.join();
            awaitGone(brief.get());
            long[] none = new long[2];
            clock.read(1, brief.get(), gone, none);
            assertEquals(0, none[0]);
            assertEquals(-1, none[1]);
        } finally {
            System.setErr(err);
        }
        assertEquals("", said.toString(StandardCharsets.UTF_8));
    }

    /** Until the kernel has let the ended thread's task go (a joined thread's may linger a moment). */
    private static void awaitGone(int tid) throws InterruptedException {
        Path task = Path.of("/proc/self/task/" + tid);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (Files.exists(task)) {
            assertTrue(System.nanoTime() < deadline, task + " is still there 10 s after its thread ended");
            Thread.sleep(1);
        }
    }
}
