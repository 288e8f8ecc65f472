package io.stoke.ffm;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** {@code sched_setscheduler} moves one thread, by its tid, to SCHED_IDLE, as the kernel reports it. */
class LibCSchedTest {
    /** Field 41 of {@code /proc/self/task/<tid>/stat}: the thread's policy, in the kernel's words. */
    private static int policyOf(int tid) throws Exception {
        String stat = Files.readString(Path.of("/proc/self/task/" + tid + "/stat"));
        return Integer.parseInt(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[41 - 3]);
    }

    @Test
    void aThreadMovesItselfToSchedIdleAndTheOthersStay() throws Exception {
        Assumptions.assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "NOT CHECKED: no /proc");
        int mine = LibC.gettid();
        AtomicReference<Object> result = new AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = LibC.allocateCallState(arena);
                int tid = LibC.gettid();
                int rc = LibC.schedSetscheduler(state, tid, LibC.SCHED_IDLE, arena.allocate(LibC.SCHED_PARAM_BYTES));
                assertEquals(0, rc, () -> LibC.strerror(LibC.errno(state)));
                assertEquals(LibC.SCHED_IDLE, LibC.schedGetscheduler(state, tid));
                result.set(policyOf(tid));
            } catch (Throwable e) {
                result.set(e);
            }
        });
        t.join();
        assertEquals(LibC.SCHED_IDLE, result.get());
        assertEquals(LibC.SCHED_OTHER, policyOf(mine), "only the thread named moved");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = LibC.allocateCallState(arena);
            assertEquals(LibC.SCHED_OTHER, LibC.schedGetscheduler(state, mine));
            assertThrows(
                    IndexOutOfBoundsException.class,
                    () -> LibC.schedSetscheduler(state, mine, LibC.SCHED_IDLE, arena.allocate(2)));
        }
    }
}
