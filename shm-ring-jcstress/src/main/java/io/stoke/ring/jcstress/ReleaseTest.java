package io.stoke.ring.jcstress;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.openjdk.jcstress.annotations.Expect.*;

import io.stoke.ring.SlotRing;
import org.openjdk.jcstress.annotations.*;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * The release hand-off: the consumer holds the ring's only slot (pixel 1), reads it and releases
 * it (SlotRing.release: state FREE, then the free queue's commit, a release); the producer polls
 * the free queue once (an acquire) and, when it gets the slot, refills it with pixel 2. The
 * consumer must never read the refill of a slot it still holds, and the slot must end in the state
 * of its last owner: FILLING when the producer took it (the consumer's FREE may not land after the
 * producer's FILLING), FREE when it did not.
 *
 * <p>r1: the pixel the consumer read; r2: the slot the producer got, -1 for none; r3: the slot's
 * state once both are done.
 */
@JCStressTest
@Outcome(
        id = "1, -1, 0",
        expect = ACCEPTABLE,
        desc = "The producer polled before the release: nothing free; the slot ends FREE.")
@Outcome(id = "1, 0, 1", expect = ACCEPTABLE, desc = "The producer took the released slot and is filling it.")
@Outcome(id = "2, .*", expect = FORBIDDEN, desc = "The consumer read the producer's refill of a slot it still held.")
@Outcome(
        expect = FORBIDDEN,
        desc = "The slot's state is not its last owner's (FREE written after the producer took it, or lost).")
@State
public class ReleaseTest {
    private final SlotRing ring = Rings.ring(1);
    private final int held;

    public ReleaseTest() {
        int slot = Rings.tryAcquire(ring);
        ring.pixels(slot).set(JAVA_BYTE, 0, (byte) 1);
        ring.publish(slot);
        held = ring.pollReady(); // the consumer holds it: state HELD, the free queue empty
    }

    @Actor
    public void consumer(III_Result r) {
        r.r1 = ring.pixels(held).get(JAVA_BYTE, 0);
        ring.release(held);
    }

    @Actor
    public void producer(III_Result r) {
        int slot = Rings.tryAcquire(ring);
        r.r2 = slot;
        if (slot >= 0) {
            ring.pixels(slot).set(JAVA_BYTE, 0, (byte) 2);
        }
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r3 = ring.state(held);
    }
}
