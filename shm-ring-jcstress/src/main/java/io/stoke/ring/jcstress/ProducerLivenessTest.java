package io.stoke.ring.jcstress;

import static org.openjdk.jcstress.annotations.Expect.*;

import io.stoke.ring.RingState;
import org.openjdk.jcstress.annotations.*;
import org.openjdk.jcstress.infra.results.JJ_Result;

/**
 * The producer's liveness words: it writes its pid, then its first heartbeat (both releases); a
 * consumer that reads the heartbeat (an acquire) and then the pid must see the pid, or it would
 * take a live producer for a dead one (pid 0) on the strength of a fresh heartbeat.
 *
 * <p>r1: the heartbeat the consumer read; r2: the pid it read after.
 */
@JCStressTest
@Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "The consumer came first.")
@Outcome(id = "0, 4242", expect = ACCEPTABLE, desc = "The pid, not yet the heartbeat.")
@Outcome(id = "1700000000000, 4242", expect = ACCEPTABLE, desc = "Both.")
@Outcome(id = "1700000000000, 0", expect = FORBIDDEN, desc = "A heartbeat without the pid written before it.")
@Outcome(expect = FORBIDDEN, desc = "A value nobody wrote (a torn word).")
@State
public class ProducerLivenessTest {
    private final RingState state = Rings.ring(1).ringState();

    @Actor
    public void producer() {
        state.producerPid(4242);
        state.producerHeartbeat(1_700_000_000_000L);
    }

    @Actor
    public void consumer(JJ_Result r) {
        r.r1 = state.producerHeartbeat();
        r.r2 = state.producerPid();
    }
}
