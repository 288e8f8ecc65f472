package io.stoke.gpu;

import java.util.concurrent.locks.LockSupport;

/**
 * Wakes the one thread that waits on it (a {@link GpuDecodeStage}'s decode thread) when a CPU thread
 * has ended something it may be waiting for: a task, or a whole batch of the CPU's.
 *
 * <p>The waiter {@link #arm arms} it before it checks what it waits for, then {@link #park parks}
 * until the check holds. No wake-up is lost: a ring after the arm reads the waiter (a volatile read
 * that sees the arm's write) and unparks it, and an unpark before the park leaves the permit that
 * makes the park return at once. A ring with no one armed is one volatile read.
 */
final class Doorbell {
    private volatile Thread waiter;

    /** Rings: the armed waiter, if any, wakes (or does not sleep) and checks again. */
    void ring() {
        Thread t = waiter;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** The calling thread waits on this from now; before its first check. */
    void arm() {
        waiter = Thread.currentThread();
    }

    /** Waits for a ring after the arm (or returns at once for one already rung), or an interrupt. */
    void park() throws InterruptedException {
        LockSupport.park(this);
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
    }

    /** {@link #park()} for at most {@code nanos}: the waiter also looks at what nothing rings for. */
    void park(long nanos) throws InterruptedException {
        LockSupport.parkNanos(this, nanos);
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
    }

    /** The armed thread no longer waits: rings stop unparking it. */
    void disarm() {
        waiter = null;
    }
}
