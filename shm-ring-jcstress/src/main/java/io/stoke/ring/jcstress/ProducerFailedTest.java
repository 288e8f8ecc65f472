package io.stoke.ring.jcstress;

import static io.stoke.ring.RingLayout.SLOT_FLAG_FAILED;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.openjdk.jcstress.annotations.Expect.*;

import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import org.openjdk.jcstress.annotations.*;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * As {@link EndOfStreamTest}, for a failure: the producer publishes a batch that explains it
 * (flagged FAILED), then writes PRODUCER_FAILED with RingState.failProducer (a release). A consumer
 * that finds the ready queue empty and sees the failure (an acquire) polls once more and must get
 * that batch, complete.
 *
 * <p>r1: the consumer saw PRODUCER_FAILED (read only when its first poll was empty); r2: the slot
 * it got, -1 for none; r3: the header's sequence and r4 its flags times 1000 plus the pixel byte,
 * -1 each when it got no slot.
 */
@JCStressTest
@Outcome(
        id = "0, -1, -1, -1",
        expect = ACCEPTABLE,
        desc = "The consumer came first: nothing published, no failure yet.")
@Outcome(id = "0, 0, 43, 1009", expect = ACCEPTABLE, desc = "The first poll got the failed batch, complete.")
@Outcome(
        id = "1, 0, 43, 1009",
        expect = ACCEPTABLE,
        desc = "Empty, then PRODUCER_FAILED, then the second poll got the failed batch, complete.")
@Outcome(
        id = "1, -1, -1, -1",
        expect = FORBIDDEN,
        desc = "PRODUCER_FAILED seen and still no batch: the batch that explains the failure is lost.")
@Outcome(expect = FORBIDDEN, desc = "The consumer got the slot but a stale header or pixel.")
@State
public class ProducerFailedTest {
    private final SlotRing ring = Rings.ring(1);
    private final SlotHeader producerView = new SlotHeader();
    private final SlotHeader consumerView = new SlotHeader();

    @Actor
    public void producer() {
        int slot = Rings.tryAcquire(ring);
        producerView.wrap(ring.slot(slot)).sequence(43).sampleCount(1).flags(SLOT_FLAG_FAILED);
        ring.pixels(slot).set(JAVA_BYTE, 0, (byte) 9);
        ring.publish(slot);
        ring.ringState().failProducer();
    }

    @Actor
    public void consumer(IIII_Result r) {
        int failed = 0;
        int slot = ring.pollReady();
        if (slot < 0 && ring.ringState().producerFailed()) {
            failed = 1;
            slot = ring.pollReady();
        }
        r.r1 = failed;
        r.r2 = slot;
        if (slot < 0) {
            r.r3 = -1;
            r.r4 = -1;
        } else {
            SlotHeader h = consumerView.wrap(ring.slot(slot));
            r.r3 = (int) h.sequence();
            r.r4 = h.flags() * 1000 + ring.pixels(slot).get(JAVA_BYTE, 0);
        }
    }
}
