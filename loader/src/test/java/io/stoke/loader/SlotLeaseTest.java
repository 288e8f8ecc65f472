package io.stoke.loader;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A slot lease gives its slot back once, after its views stop working, however often it is closed. */
class SlotLeaseTest {
    @Test
    void givesTheSlotBackOnceAfterItsViewsStopWorking() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(64);
            List<Integer> returned = new ArrayList<>();
            SlotLease lease = new SlotLease(7, slot -> {
                returned.add(slot);
                assertTrue(memory.scope().isAlive(), "the slot's own memory stays");
            });
            MemorySegment view = lease.view(memory);
            view.set(JAVA_INT, 0, 42);
            assertEquals(42, memory.get(JAVA_INT, 0), "a view is the slot's memory");
            assertFalse(lease.isClosed());

            assertTrue(lease.giveBack());
            assertEquals(List.of(7), returned);
            assertTrue(lease.isClosed());
            assertThrows(IllegalStateException.class, () -> view.get(JAVA_INT, 0));
            assertFalse(lease.giveBack(), "a second close gives nothing back");
            assertFalse(lease.abandon());
            assertEquals(List.of(7), returned);
        }
    }

    @Test
    void anAbandonedLeaseGivesNothingBack() {
        AtomicInteger returned = new AtomicInteger();
        SlotLease lease = new SlotLease(3, slot -> returned.incrementAndGet());
        MemorySegment view = lease.view(Arena.global().allocate(8));
        assertTrue(lease.abandon());
        assertThrows(IllegalStateException.class, () -> view.get(JAVA_INT, 0));
        assertFalse(lease.giveBack());
        assertEquals(0, returned.get());
    }

    @Test
    void closesRacingOnManyThreadsGiveBackOnce() throws InterruptedException {
        for (int round = 0; round < 200; round++) {
            AtomicInteger returned = new AtomicInteger();
            SlotLease lease = new SlotLease(round, slot -> returned.incrementAndGet());
            CountDownLatch go = new CountDownLatch(1);
            Thread[] threads = new Thread[4];
            for (int t = 0; t < threads.length; t++) {
                threads[t] = Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                    lease.giveBack();
                });
            }
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertEquals(1, returned.get(), "round " + round);
        }
    }
}
