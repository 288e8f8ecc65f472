package io.stoke.ring.jcstress;

import static io.stoke.ring.RingLayout.*;

import io.stoke.ring.RingGeometry;
import io.stoke.ring.SlotRing;
import java.lang.foreign.Arena;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NoOpIdleStrategy;

/** What every test's state starts from: a small ring of its own. */
final class Rings {
    /** For {@link SlotRing#acquire}: with a {@code keepWaiting} of false it polls the free queue once. */
    static final IdleStrategy ONCE = NoOpIdleStrategy.INSTANCE;

    private Rings() {}

    /**
     * A ring of {@code slots} slots of one 1x1x3 uint8 sample, every slot free, over memory that the
     * garbage collector frees (jcstress makes many thousands of these; the ring is never closed, as
     * closing would close an automatic arena).
     */
    static SlotRing ring(int slots) {
        RingGeometry geometry = new RingGeometry(slots, 1, DTYPE_UINT8, LAYOUT_HWC, 1, 1, 3);
        Arena arena = Arena.ofAuto();
        return SlotRing.over(geometry, arena, arena.allocate(geometry.totalLength(), PAGE), true);
    }

    /** Polls the free queue once: a slot, or -1 when none is free. */
    static int tryAcquire(SlotRing ring) {
        return ring.acquire(ONCE, () -> false);
    }
}
