package io.stoke.ring.jcstress;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.openjdk.jcstress.annotations.Expect.*;

import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import org.openjdk.jcstress.annotations.*;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * The producer publishes its last batch, then ends the stream; a consumer that finds the ready
 * queue empty, sees END_OF_STREAM and polls once more must get that batch, and whoever gets the
 * slot must see what the producer wrote into it (the ready queue's commit is a release, its poll
 * an acquire; RingState.endStream a release, endOfStream an acquire).
 *
 * <p>r1: the consumer saw END_OF_STREAM (read only when its first poll was empty); r2: the slot it
 * got, -1 for none; r3: the slot header's sequence and r4 its sample count times 1000 plus the
 * pixel byte, -1 each when it got no slot.
 */
@JCStressTest
@Outcome(
        id = "0, -1, -1, -1",
        expect = ACCEPTABLE,
        desc = "The consumer came first: nothing published, the stream not ended.")
@Outcome(id = "0, 0, 42, 1007", expect = ACCEPTABLE, desc = "The first poll got the batch, complete.")
@Outcome(
        id = "1, 0, 42, 1007",
        expect = ACCEPTABLE,
        desc = "Empty, then END_OF_STREAM, then the second poll got the batch, complete.")
@Outcome(
        id = "1, -1, -1, -1",
        expect = FORBIDDEN,
        desc = "END_OF_STREAM seen and still no batch: a batch published before the end is lost.")
@Outcome(expect = FORBIDDEN, desc = "The consumer got the slot but a stale header or pixel.")
@State
public class EndOfStreamTest {
    private final SlotRing ring = Rings.ring(1);
    private final SlotHeader producerView = new SlotHeader();
    private final SlotHeader consumerView = new SlotHeader();

    @Actor
    public void producer() {
        int slot = Rings.tryAcquire(ring);
        producerView.wrap(ring.slot(slot)).sequence(42).sampleCount(1);
        ring.pixels(slot).set(JAVA_BYTE, 0, (byte) 7);
        ring.publish(slot);
        ring.ringState().endStream();
    }

    @Actor
    public void consumer(IIII_Result r) {
        int end = 0;
        int slot = ring.pollReady();
        if (slot < 0 && ring.ringState().endOfStream()) {
            end = 1;
            slot = ring.pollReady();
        }
        r.r1 = end;
        r.r2 = slot;
        if (slot < 0) {
            r.r3 = -1;
            r.r4 = -1;
        } else {
            SlotHeader h = consumerView.wrap(ring.slot(slot));
            r.r3 = (int) h.sequence();
            r.r4 = h.sampleCount() * 1000 + ring.pixels(slot).get(JAVA_BYTE, 0);
        }
    }
}
