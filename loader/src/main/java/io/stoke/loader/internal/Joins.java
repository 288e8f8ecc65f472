package io.stoke.loader.internal;

/** Waiting for a thread of one's own to end, as a {@code close()} does, which may not throw. */
public final class Joins {
    private Joins() {}

    /**
     * Waits for {@code t} to end, through interrupts, which it keeps for the caller (set again on
     * return): the thread was told to stop, and what it holds is freed only after it has.
     */
    public static void uninterruptibly(Thread t) {
        boolean interrupted = false;
        while (t.isAlive()) {
            try {
                t.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
