package io.stoke.loader.work;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Which workers run: the first n of one set, the rest parked until a change or the end. */
class WorkerActivityTest {
    private static String active(WorkerActivity a) {
        StringBuilder sb = new StringBuilder();
        for (int id = 0; id < a.threadCount(); id++) {
            sb.append(a.isActive(id) ? '1' : '0');
        }
        return sb.toString();
    }

    @Test
    void theFirstNOfOneSetRun() {
        WorkerActivity a = new WorkerActivity(3, true);
        assertEquals(6, a.threadCount());
        assertEquals("111000", active(a), "all of the first set at the start");
        a.activate(1, false);
        assertEquals("100000", active(a));
        assertEquals(1, a.activeWorkers());
        a.activate(2, true);
        assertEquals("000110", active(a), "the yielding set's first two");
        a.activate(3, true);
        assertEquals("000111", active(a));
        assertTrue(a.inYieldingSet(3));
        assertFalse(a.inYieldingSet(2));
    }

    @Test
    void refusesCountsOutsideTheSetsAndAYieldingSetThatIsNotThere() {
        WorkerActivity fixed = new WorkerActivity(2, false);
        assertEquals(2, fixed.threadCount());
        assertThrows(IllegalArgumentException.class, () -> fixed.activate(0, false));
        assertThrows(IllegalArgumentException.class, () -> fixed.activate(3, false));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> fixed.activate(1, true));
        assertTrue(e.getMessage().contains("active workers 1 yielding of 2"), e.getMessage());
        assertEquals("11", active(fixed), "a refused change changes nothing");
        assertThrows(IllegalArgumentException.class, () -> fixed.threads(new Thread[3]));
    }

    @Test
    void aParkedWorkerWakesWhenActivatedOrWhenThePipelineStops() throws Exception {
        WorkerActivity a = new WorkerActivity(2, true);
        RunState state = new RunState(Long.MAX_VALUE);
        CompletableFuture<Boolean> yielding = new CompletableFuture<>();
        CompletableFuture<Boolean> last = new CompletableFuture<>();
        Thread[] threads = new Thread[4];
        for (int id = 0; id < 4; id++) {
            int w = id;
            threads[id] = Thread.ofPlatform().unstarted(() -> {
                if (w == 2) {
                    yielding.complete(a.awaitActive(w, state));
                } else if (w == 3) {
                    last.complete(a.awaitActive(w, state));
                }
            });
        }
        a.threads(threads);
        for (Thread t : threads) {
            t.start();
        }
        awaitParked(threads[2]);
        awaitParked(threads[3]);
        assertFalse(yielding.isDone());
        a.activate(1, true);
        assertTrue(yielding.get(10, TimeUnit.SECONDS), "worker 2 runs once the yielding set's first is active");
        awaitParked(threads[3]);
        assertFalse(last.isDone(), "worker 3 is still the second of its set");
        state.running = false;
        a.wakeAll();
        assertFalse(last.get(10, TimeUnit.SECONDS), "a stopped pipeline's parked worker leaves");
        for (Thread t : threads) {
            t.join();
        }
    }

    private static void awaitParked(Thread t) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (t.getState() != Thread.State.WAITING) {
            assertTrue(System.nanoTime() < end, t + " never parked: " + t.getState());
            Thread.sleep(1);
        }
    }
}
