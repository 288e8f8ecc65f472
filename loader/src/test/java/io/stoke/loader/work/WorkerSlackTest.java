package io.stoke.loader.work;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingLayout;
import io.stoke.ring.SlotRing;
import java.util.function.BooleanSupplier;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.junit.jupiter.api.Test;

/**
 * The loader's slack, as the restart cache's fillers read it: only a waiting, finished or stopped
 * pipeline has any; and as its workers read it: that, or half the ring ready for the consumer.
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
            BooleanSupplier copy = slack.forWorkers(ring);
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
}
