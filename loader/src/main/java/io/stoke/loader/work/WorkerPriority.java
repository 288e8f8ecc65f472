package io.stoke.loader.work;

import io.stoke.ffm.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Lowers a worker thread's CPU priority: its nice value becomes {@code nice} (0 to 19), so that a
 * consumer on the same cores, such as a model's threads, runs first and the workers decode on what
 * it leaves. The total work is the same; what changes is who waits. A model step parallelised over
 * every core waits for its slowest thread, and a decoding worker that takes one core from it stalls
 * them all, so on a machine the model fills, priority to the model is throughput gained.
 *
 * <p>Linux sets a nice value per thread ({@code setpriority(PRIO_PROCESS, tid, nice)}); raising it
 * needs no privilege. A thread already nicer than asked (a process started under {@code nice})
 * is left as it is. Any other failure is said once, loudly, and the workers run at the priority
 * they have.
 */
final class WorkerPriority {
    private static final AtomicBoolean WARNED = new AtomicBoolean();

    private WorkerPriority() {}

    /** Sets the calling thread's nice value to {@code nice}; nothing for 0. */
    static void lower(int nice) {
        if (nice == 0) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = LibC.allocateCallState(arena);
            if (LibC.setpriority(state, LibC.PRIO_PROCESS, LibC.gettid(), nice) != 0) {
                int errno = LibC.errno(state);
                if (errno != LibC.EACCES) { // EACCES: the thread is nicer already, and only root may lower it
                    warn(LibC.strerror(errno));
                }
            }
        } catch (RuntimeException | LinkageError e) {
            warn(e.toString());
        }
    }

    private static void warn(String why) {
        if (WARNED.compareAndSet(false, true)) {
            System.err.println("stoke: WARNING: could not lower the decoding threads' priority (" + why
                    + "); they run at the process's priority.");
        }
    }
}
