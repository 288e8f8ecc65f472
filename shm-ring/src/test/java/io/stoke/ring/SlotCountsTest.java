package io.stoke.ring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.agrona.concurrent.BusySpinIdleStrategy;
import org.junit.jupiter.api.Test;

/**
 * The ring's status view follows each slot through free, filling, ready and held; the ready count a
 * producer asks on its hot path agrees with it.
 */
class SlotCountsTest {
    @Test
    void countsFollowEverySlotThroughItsStates() {
        RingGeometry g = new RingGeometry(4, 2, RingLayout.DTYPE_UINT8, RingLayout.LAYOUT_HWC, 4, 4, 3);
        try (SlotRing ring = SlotRing.allocate(g)) {
            assertEquals(new SlotCounts(4, 0, 0, 0, 0), ring.counts());
            assertEquals(0, ring.readySlots());
            int a = ring.acquire(new BusySpinIdleStrategy(), () -> true);
            int b = ring.acquire(new BusySpinIdleStrategy(), () -> true);
            int c = ring.acquire(new BusySpinIdleStrategy(), () -> true);
            assertEquals(new SlotCounts(1, 3, 0, 0, 0), ring.counts());
            ring.publish(a);
            ring.publish(b);
            assertEquals(new SlotCounts(1, 1, 2, 0, 0), ring.counts());
            assertEquals(2, ring.readySlots(), "published, not taken");
            assertEquals(a, ring.pollReady());
            SlotCounts counts = ring.counts();
            assertEquals(new SlotCounts(1, 1, 1, 1, 0), counts);
            assertEquals(3, counts.inUse());
            assertEquals(1, ring.readySlots(), "the held one is the consumer's, not waiting");
            ring.release(a);
            assertEquals(b, ring.pollReady());
            ring.release(b);
            ring.publish(c);
            assertEquals(c, ring.pollReady());
            ring.release(c);
            assertEquals(true, ring.counts().drained());
            assertEquals(new SlotCounts(4, 0, 0, 0, 0), ring.counts());
        }
    }
}
