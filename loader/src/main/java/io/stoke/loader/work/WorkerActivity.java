package io.stoke.loader.work;

import java.util.concurrent.locks.LockSupport;

/**
 * Which workers take samples: all of them with a fixed count; with auto-workers, the first
 * {@code n} of one set, the others parked between two samples, holding no ticket, so no batch
 * ever waits on a parked worker and changing the count changes no batch's content.
 *
 * <p>When the workers may yield (auto-workers with no nice value asked for) there are two sets of
 * threads: {@code [0, max)} at the process's priority and {@code [max, 2 max)} at a higher nice
 * value, and the active workers are the first {@code n} of one set. Linux lets a thread raise its
 * nice value but not lower it back without privilege, so switching sets is how the priority goes
 * back and forth.
 */
final class WorkerActivity {
    private static final int COUNT = 0xFFFF;
    private static final int YIELDING = 1 << 16;

    private final int maxWorkers;
    private final boolean hasYieldingSet;
    // Their count in the low 16 bits, bit 16 set when the yielding set is the active one. One
    // volatile int, so a worker reads count and set together.
    private volatile int mode;
    private Thread[] threads = new Thread[0];

    /** All {@code maxWorkers} of the first set active; {@code yieldingSet}: a second set exists. */
    WorkerActivity(int maxWorkers, boolean yieldingSet) {
        if (maxWorkers < 1 || maxWorkers > COUNT) {
            throw new IllegalArgumentException("workers must be in [1, " + COUNT + "], not " + maxWorkers);
        }
        this.maxWorkers = maxWorkers;
        this.hasYieldingSet = yieldingSet;
        this.mode = maxWorkers;
    }

    /** Threads in all: {@code maxWorkers}, twice that with a yielding set. */
    int threadCount() {
        return hasYieldingSet ? 2 * maxWorkers : maxWorkers;
    }

    int maxWorkers() {
        return maxWorkers;
    }

    /** Whether worker {@code id} belongs to the yielding set. */
    boolean inYieldingSet(int id) {
        return id >= maxWorkers;
    }

    /** The threads to wake on a change, {@link #threadCount()} of them; set once before any starts. */
    void threads(Thread[] threads) {
        if (threads.length != threadCount()) {
            throw new IllegalArgumentException(threads.length + " threads for " + threadCount() + " workers");
        }
        this.threads = threads;
    }

    boolean isActive(int id) {
        int m = mode;
        boolean yieldingSet = id >= maxWorkers;
        return yieldingSet == ((m & YIELDING) != 0) && id - (yieldingSet ? maxWorkers : 0) < (m & COUNT);
    }

    /** Parks worker {@code id} while it is inactive; false once {@code state} stops running. */
    boolean awaitActive(int id, RunState state) {
        while (state.running && !isActive(id)) {
            LockSupport.park(this);
        }
        return state.running;
    }

    /**
     * Lets the first {@code n} workers of one set take samples from their next one: the yielding
     * set's when {@code yielding}; the others park after the sample in hand.
     */
    void activate(int n, boolean yielding) {
        if (n < 1 || n > maxWorkers || (yielding && !hasYieldingSet)) {
            throw new IllegalArgumentException(
                    "active workers " + n + (yielding ? " yielding" : "") + " of " + maxWorkers);
        }
        mode = n | (yielding ? YIELDING : 0);
        wakeAll();
    }

    /** Workers taking samples now. */
    int activeWorkers() {
        return mode & COUNT;
    }

    /** Unparks every thread: after a change, or for them to see that the pipeline stopped. */
    void wakeAll() {
        for (Thread t : threads) {
            LockSupport.unpark(t);
        }
    }
}
