package io.stoke.loader.work;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingLayout;
import io.stoke.ring.SlotRing;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.junit.jupiter.api.Test;

/**
 * The loader's slack, as the restart cache's fillers read it: only a waiting, finished or stopped
 * pipeline has any; and as its workers read it: that, or half the ring ready for the consumer, or
 * one slot ready for a consumer that finds its batches ready.
 */
class WorkerSlackTest {
    @Test
    void workersThatAllDecodeLeaveNoSlack() {
        WorkerSlack slack = new WorkerSlack(new RunState(10));
        assertFalse(slack.getAsBoolean(), "every worker decoding");
        slack.waitStarts();
        assertTrue(slack.getAsBoolean(), "one waits for a slot");
        slack.waitStarts();
        slack.waitEnds();
        assertTrue(slack.getAsBoolean(), "the other still waits");
        slack.waitEnds();
        assertFalse(slack.getAsBoolean(), "both decode again");
    }

    @Test
    void aFinishedWorkerOrAStoppedPipelineLeavesSlack() {
        WorkerSlack finished = new WorkerSlack(new RunState(10));
        finished.workerFinished();
        assertTrue(finished.getAsBoolean(), "past the last ticket");
        RunState state = new RunState(10);
        WorkerSlack stopped = new WorkerSlack(state);
        state.running = false;
        assertTrue(stopped.getAsBoolean(), "closed");
    }

    @Test
    void workersCopyWhileHalfTheRingWaitsForTheConsumer() {
        RingGeometry g = new RingGeometry(4, 2, RingLayout.DTYPE_UINT8, RingLayout.LAYOUT_HWC, 4, 4, 3);
        try (SlotRing ring = SlotRing.allocate(g)) {
            WorkerSlack slack = new WorkerSlack(new RunState(10));
            BooleanSupplier copy = slack.forWorkers(ring, () -> 0, () -> 0);
            int[] slots = new int[3];
            for (int i = 0; i < 3; i++) {
                slots[i] = ring.acquire(new BusySpinIdleStrategy(), () -> true);
            }
            assertFalse(copy.getAsBoolean(), "three slots filling, none ready: the consumer waits on them");
            ring.publish(slots[0]);
            assertFalse(copy.getAsBoolean(), "one ready of four: a loader-bound consumer's");
            ring.publish(slots[1]);
            assertTrue(copy.getAsBoolean(), "two of four ready: the consumer is behind");
            assertEquals(slots[0], ring.pollReady());
            assertFalse(copy.getAsBoolean(), "the consumer took one: one waits");
            slack.waitStarts();
            assertTrue(copy.getAsBoolean(), "a worker waits: the fillers' slack is the workers' too");
            slack.waitEnds();
            assertFalse(copy.getAsBoolean());
        }
    }

    @Test
    void workersCopyWhileOneSlotIsReadyForAConsumerThatFindsItsBatchesReady() {
        RingGeometry g = new RingGeometry(4, 2, RingLayout.DTYPE_UINT8, RingLayout.LAYOUT_HWC, 4, 4, 3);
        try (SlotRing ring = SlotRing.allocate(g)) {
            WorkerSlack slack = new WorkerSlack(new RunState(100));
            AtomicLong taken = new AtomicLong();
            AtomicLong waited = new AtomicLong();
            BooleanSupplier copy = slack.forWorkers(ring, taken::get, waited::get);
            int slot = ring.acquire(new BusySpinIdleStrategy(), () -> true);
            ring.publish(slot);
            assertFalse(copy.getAsBoolean(), "one ready, the consumer not judged yet");
            // A model-bound consumer: each batch ready when it asks, a poll's wait.
            taken.set(2);
            waited.set(2 * 20_000);
            assertTrue(copy.getAsBoolean(), "two takes of 20 us waiting each: it keeps up");
            taken.set(3);
            waited.set(3 * 20_000 + 40_000_000);
            assertTrue(copy.getAsBoolean(), "one take more is not judged alone: the last verdict");
            taken.set(4);
            assertFalse(copy.getAsBoolean(), "two takes, 40 ms of waiting: the loader sets the pace");
            taken.set(6);
            waited.addAndGet(2 * (WorkerSlack.READY_WAIT_NANOS - 1));
            assertTrue(copy.getAsBoolean(), "just under the bound a take");
            taken.set(8);
            waited.addAndGet(2 * WorkerSlack.READY_WAIT_NANOS);
            assertFalse(copy.getAsBoolean(), "at the bound");
            assertEquals(slot, ring.pollReady());
            taken.set(10);
            waited.addAndGet(2);
            assertFalse(copy.getAsBoolean(), "nothing ready: no copy, whatever the consumer did");
        }
    }

    @Test
    void aConsumerThatSaysNothingOfItsWaitsIsNeverJudgedToKeepUp() {
        WorkerSlack slack = new WorkerSlack(new RunState(100));
        assertFalse(slack.consumerKeepsUp(0, 0), "no takes yet");
        assertFalse(slack.consumerKeepsUp(10, 0), "ten takes, no wait reported");
        assertTrue(slack.consumerKeepsUp(20, 1), "one nanosecond reported over ten takes");
    }
}
