package io.stoke.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ring.SlotCounts;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class StallReportTest {
    private static final long S = 1_000_000_000L;
    /** The consumer waits: nothing ready, one slot held of four, three free. */
    private static final SlotCounts WAITING = new SlotCounts(3, 0, 0, 1, 0);

    private final List<String> said = new ArrayList<>();

    @Test
    void saysOnceAfterTheLimitWithTheProducersWordsAndABlockedThreadsLockAndOwner() throws Exception {
        Object lock = new Object();
        CountDownLatch entering = new CountDownLatch(1);
        Thread blocked = Thread.ofPlatform().name("stall-test-blocked").unstarted(() -> {
            entering.countDown();
            synchronized (lock) {
                lock.hashCode();
            }
        });
        StallReport report = new StallReport(60_000);
        synchronized (lock) {
            blocked.start();
            entering.await();
            while (blocked.getState() != Thread.State.BLOCKED) {
                Thread.onSpinWait();
            }
            assertFalse(report.check(0, 5, WAITING, 4, () -> "figures", said::add));
            assertFalse(report.check(59 * S, 5, WAITING, 4, () -> "figures", said::add));
            assertTrue(said.isEmpty(), said.toString());
            assertTrue(report.check(61 * S, 5, WAITING, 4, () -> "figures", said::add));
        }
        blocked.join();
        assertEquals(
                "stall: no batch published for 61 s while the consumer waits (5 published; slots: 1 held, 0 filling,"
                        + " 3 free of 4): the producer's threads follow, for a bug report; it goes on waiting",
                said.get(0));
        assertEquals("stall: producer: figures", said.get(1));
        String me = Thread.currentThread().getName();
        int at = said.indexOf(said.stream()
                .filter(l -> l.startsWith("stall: \"stall-test-blocked\" BLOCKED on java.lang.Object@"))
                .findFirst()
                .orElseThrow(() -> new AssertionError(said.toString())));
        assertTrue(said.get(at).endsWith(" held by \"" + me + "\""), said.get(at));
        assertTrue(
                said.get(at + 1).startsWith("stall:     at ")
                        && said.get(at + 1).contains("io.stoke.serve.StallReportTest.lambda$"),
                said.get(at + 1));
        assertTrue(said.stream().allMatch(l -> l.startsWith(StallReport.LINE)), said.toString());
        // Once a stall: later looks say nothing more.
        int lines = said.size();
        assertFalse(report.check(200 * S, 5, WAITING, 4, () -> "figures", said::add));
        assertEquals(lines, said.size());
    }

    @Test
    void aBatchArmsItAgainAndItCountsFromThatBatch() {
        StallReport report = new StallReport(10_000);
        report.check(0, 1, WAITING, 4, () -> null, said::add);
        assertTrue(report.check(11 * S, 1, WAITING, 4, () -> null, said::add));
        assertFalse(report.check(12 * S, 2, WAITING, 4, () -> null, said::add)); // a batch: from here
        assertFalse(report.check(21 * S, 2, WAITING, 4, () -> null, said::add));
        assertTrue(report.check(23 * S, 2, WAITING, 4, () -> null, said::add));
        assertTrue(said.stream().noneMatch(l -> l.startsWith("stall: producer:")), "no producer's words when null");
    }

    /** Waiting for an order feed's next epoch is the consumer's wait: the limit counts from its end. */
    @Test
    void aWaitOnTheConsumersOrderCountsNotAndTheLimitRunsFromItsEnd() {
        StallReport report = new StallReport(10_000);
        report.check(0, 1, WAITING, 4, () -> null, said::add);
        report.consumerOwes(5 * S);
        report.consumerOwes(40 * S); // the consumer gave the order after 35 s of its own (a validation pass)
        assertFalse(report.check(41 * S, 1, WAITING, 4, () -> null, said::add));
        assertFalse(report.check(49 * S, 1, WAITING, 4, () -> null, said::add));
        assertTrue(said.isEmpty(), said.toString());
        assertTrue(report.check(51 * S, 1, WAITING, 4, () -> null, said::add), "a stall from there is one");
    }

    @Test
    void neverWhereABatchIsReadyOrTheConsumerHoldsEverySlotOrTheLimitIsZero() {
        StallReport report = new StallReport(10_000);
        SlotCounts ready = new SlotCounts(2, 0, 1, 1, 0);
        SlotCounts allHeld = new SlotCounts(0, 0, 0, 4, 0);
        for (long t = 0; t < 100; t += 5) {
            assertFalse(report.check(t * S, 3, ready, 4, () -> null, said::add));
        }
        for (long t = 0; t < 100; t += 5) {
            assertFalse(report.check(t * S, 3, allHeld, 4, () -> null, said::add));
        }
        StallReport never = new StallReport(0);
        for (long t = 0; t < 100; t += 5) {
            assertFalse(never.check(t * S, 3, WAITING, 4, () -> null, said::add));
        }
        assertTrue(said.isEmpty(), said.toString());
    }
}
