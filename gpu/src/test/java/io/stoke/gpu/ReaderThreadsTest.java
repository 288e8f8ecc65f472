package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The reader threads' background work: taken only when no task waits, a step at a time. */
class ReaderThreadsTest {
    /** Background steps that each wait for a permit, so the test says when each may end. */
    static final class Steps implements ReaderThreads.Background {
        final Semaphore permits = new Semaphore(0);
        final AtomicInteger left = new AtomicInteger();
        final AtomicInteger done = new AtomicInteger();
        final AtomicInteger entered = new AtomicInteger();

        @Override
        public boolean step(io.stoke.loader.source.SampleReader reader, io.stoke.loader.decode.SampleTransform t) {
            if (left.get() == 0) {
                return false;
            }
            entered.incrementAndGet();
            permits.acquireUninterruptibly();
            left.decrementAndGet();
            done.incrementAndGet();
            return true;
        }
    }

    @Test
    void aTaskGoesAheadOfTheBackgroundAfterTheStepRunningAndTheBackgroundResumesWhenWoken() throws Exception {
        Steps steps = new Steps();
        steps.left.set(100);
        try (ReaderThreads threads = new ReaderThreads(1, () -> null, () -> null, new Doorbell())) {
            threads.background(steps);
            threads.wake();
            steps.permits.release(); // step 1 ends; the thread waits in step 2
            waitFor(() -> steps.entered.get() == 2);
            AtomicInteger seen = new AtomicInteger(-1);
            Future<?> task = threads.submit(0, (reader, transform) -> seen.set(steps.done.get()));
            steps.permits.release(); // step 2 ends: the task runs before step 3
            task.get(10, TimeUnit.SECONDS);
            assertEquals(2, seen.get(), "the task ran after the step it found running, not after the background");
            steps.permits.release(98);
            waitFor(() -> steps.done.get() == 100);
            // Out of work, the thread waits for a task; more background work and a wake start it again.
            steps.left.set(3);
            steps.permits.release(3);
            threads.wake();
            waitFor(() -> steps.done.get() == 103);
        }
    }

    /**
     * The doorbell rings after each task's future has completed, in either lane, so a thread that
     * arms it, checks, and parks wakes to find what it waits for: a ring before the completion would
     * be lost, and the loop below would park for good. (A whole batch's end rings from the batch,
     * not from the threads' background steps: GpuDecodeStageTest's held read.)
     */
    @Test
    void theDoorbellRingsOnceATasksFutureIsDone() {
        Doorbell done = new Doorbell();
        try (ReaderThreads threads = new ReaderThreads(1, () -> null, () -> null, done)) {
            assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                for (int k = 0; k < 2000; k++) {
                    done.arm();
                    Future<?> f = k % 2 == 0
                            ? threads.submit(0, (reader, transform) -> {})
                            : threads.submitFirst(0, (reader, transform) -> {});
                    while (!f.isDone()) {
                        done.park();
                    }
                    done.disarm();
                }
            });
        }
    }

    @Test
    void urgentTasksGoAheadOfTheRestInTheOrderGiven() throws Exception {
        try (ReaderThreads threads = new ReaderThreads(1, () -> null, () -> null, new Doorbell())) {
            java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
            java.util.List<String> order = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
            threads.submit(0, (reader, transform) -> {
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            threads.submit(0, (reader, transform) -> order.add("reads 1"));
            threads.submitFirst(0, (reader, transform) -> order.add("round 1"));
            threads.submitFirst(0, (reader, transform) -> order.add("round 2"));
            Future<?> last = threads.submit(0, (reader, transform) -> order.add("reads 2"));
            hold.countDown();
            last.get(10, TimeUnit.SECONDS);
            // An older batch's round before a newer one's, both before the reads queued.
            assertEquals(java.util.List.of("round 1", "round 2", "reads 1", "reads 2"), order);
        }
    }

    /**
     * What a restart cache's fillers are paced by: idle while a thread waits for a task, not while
     * every thread runs a task or a background step, idle again once closed; given before any thread
     * starts.
     */
    @Test
    void theThreadsAreIdleOnlyWhileOneWaitsForATaskOrOnceClosed() throws Exception {
        java.util.concurrent.atomic.AtomicReference<java.util.function.BooleanSupplier> idle =
                new java.util.concurrent.atomic.AtomicReference<>();
        Steps steps = new Steps();
        java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
        ReaderThreads threads = new ReaderThreads(
                2,
                () -> {
                    assertTrue(idle.get() != null, "paced before a thread makes its reader");
                    return null;
                },
                () -> null,
                new Doorbell(),
                idle::set);
        try {
            waitFor(() -> idle.get().getAsBoolean()); // both threads wait for a task
            Future<?> busy = threads.submit(0, (reader, transform) -> {
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            steps.left.set(1);
            threads.background(steps);
            threads.wake(); // thread 1 takes the background step, which waits for a permit
            waitFor(() -> steps.entered.get() == 1);
            waitFor(() -> !idle.get().getAsBoolean());
            Thread.sleep(20);
            assertTrue(!idle.get().getAsBoolean(), "no core to spare while both threads work");
            steps.permits.release(); // the background ends: thread 1 waits for a task
            waitFor(() -> idle.get().getAsBoolean());
            hold.countDown();
            busy.get(10, TimeUnit.SECONDS);
        } finally {
            hold.countDown();
            threads.close();
        }
        assertTrue(idle.get().getAsBoolean(), "closed: the fillers may have every core");
    }

    static void waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out");
            Thread.sleep(1);
        }
    }
}
