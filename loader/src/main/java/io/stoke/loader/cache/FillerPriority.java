package io.stoke.loader.cache;

import io.stoke.ffm.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * Moves a filler thread to Linux's {@code SCHED_IDLE}: below every nice value, it gets a sliver
 * of a core another thread wants (a weight of 3 against nice 19's 15), so the workers (and a
 * model's threads) keep nearly all of it whatever their nice value (stoke.DataLoader starts its
 * workers at nice 19, the filler's old priority, where the two took turns). The loader's gate
 * ({@link RestartCache#pace}) keeps the fillers off busy cores altogether. Needs no privilege. Where it is refused (another kernel, a seccomp filter), the
 * thread falls back to nice 19, said once, loudly: it then competes with workers of the same nice.
 */
final class FillerPriority {
    private static final AtomicBoolean SAID = new AtomicBoolean();

    private FillerPriority() {}

    /** Lowers the calling thread to {@code SCHED_IDLE}, or else nice 19 (said once to {@code say}). */
    static void lowest(Consumer<String> say) {
        String why;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment callState = LibC.allocateCallState(arena);
            MemorySegment param = arena.allocate(LibC.SCHED_PARAM_BYTES); // sched_priority 0
            int tid = LibC.gettid();
            if (LibC.schedSetscheduler(callState, tid, LibC.SCHED_IDLE, param) == 0) {
                return;
            }
            why = LibC.strerror(LibC.errno(callState));
            LibC.setpriority(callState, LibC.PRIO_PROCESS, tid, 19);
        } catch (RuntimeException | LinkageError e) {
            why = e.toString();
        }
        if (SAID.compareAndSet(false, true)) {
            say.accept("WARNING: the restart cache's filler cannot run under SCHED_IDLE (" + why
                    + "); it runs at nice 19 instead, and shares the cores with workers of the same nice (said once)");
        }
    }
}
