package io.stoke.ring.jcstress;

import static org.openjdk.jcstress.annotations.Expect.*;

import io.stoke.ring.RingState;
import org.openjdk.jcstress.annotations.*;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Two consumers race for the ring's one consumer seat (RingState.compareAndSetConsumerPid from 0
 * to their pid; stoke_consumer_seat_cas in C): exactly one wins, and the seat holds the winner's pid.
 *
 * <p>r1, r2: whether consumer 101 and consumer 202 won; r3: the seat once both are done.
 */
@JCStressTest
@Outcome(id = "1, 0, 101", expect = ACCEPTABLE, desc = "Consumer 101 took the seat, 202 was refused.")
@Outcome(id = "0, 1, 202", expect = ACCEPTABLE, desc = "Consumer 202 took the seat, 101 was refused.")
@Outcome(expect = FORBIDDEN, desc = "Both or neither won, or the seat does not hold the winner.")
@State
public class ConsumerSeatTest {
    private final RingState state = Rings.ring(1).ringState();

    @Actor
    public void consumer101(III_Result r) {
        r.r1 = state.compareAndSetConsumerPid(0, 101) ? 1 : 0;
    }

    @Actor
    public void consumer202(III_Result r) {
        r.r2 = state.compareAndSetConsumerPid(0, 202) ? 1 : 0;
    }

    @Arbiter
    public void seat(III_Result r) {
        r.r3 = (int) state.consumerPid();
    }
}
