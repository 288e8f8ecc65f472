package io.stoke.loader;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.LibC;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * {@link AllocatorThresholds} against what glibc's allocator does, counted in the kernel's minor
 * page faults of one thread: a 24 MB block (a large photograph's coefficients) allocated, written,
 * freed and allocated again. With small fixed thresholds, as glibc starts, the second block is
 * faulted in again page by page; with Stoke's, the thread's arena keeps it. Each case runs in a
 * thread of its own, as a worker's are (glibc gives it an arena, or one a finished thread left).
 */
class AllocatorThresholdsTest {
    private static final long BLOCK = 24L << 20;
    private static final long PAGES = BLOCK / 4096;
    private static final int RUSAGE_THREAD = 1;
    private static final long RUSAGE_BYTES = 144;
    private static final long RU_MINFLT = 64; // after two timevals and four longs

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MALLOC = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("malloc"), FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    private static final MethodHandle FREE =
            LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("free"), FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle GETRUSAGE = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("getrusage"), FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));

    @Test
    void anArenaKeepsALargeFreedBlockOnceTheThresholdsAreSet() throws Exception {
        // glibc as a process starts, its moving thresholds pinned at their first values: the
        // block is mapped for each allocation and unmapped at each free.
        assertEquals(1, LibC.mallopt(LibC.M_MMAP_THRESHOLD, 128 << 10));
        assertEquals(1, LibC.mallopt(LibC.M_TRIM_THRESHOLD, 128 << 10));
        long before = secondBlockFaults();
        assertTrue(
                before > PAGES / 2,
                "with glibc's first thresholds the block is faulted in again: " + before + " faults for " + PAGES
                        + " pages");

        ByteArrayOutputStream said = new ByteArrayOutputStream();
        assertTrue(AllocatorThresholds.set(new PrintStream(said, true, StandardCharsets.UTF_8)));
        assertEquals("", said.toString(StandardCharsets.UTF_8));
        // Ten tries: with the mmap threshold alone (the trim left at glibc's), a freed block that
        // lies at the arena's top is given back, and one that does not is kept: a trim threshold left
        // unset, planted, faulted the block in again in 3 tries of 5. (Not asserted as a control:
        // where the block lies is the arena's history, not the test's.)
        for (int i = 0; i < 10; i++) {
            long after = secondBlockFaults();
            assertTrue(
                    after < PAGES / 10,
                    "with Stoke's thresholds the arena keeps the block: " + after + " faults for " + PAGES + " pages");
        }
    }

    /** In a new thread: allocates, writes and frees the block twice; the second round's faults. */
    private static long secondBlockFaults() throws Exception {
        AtomicLong faults = new AtomicLong(-1);
        Throwable[] failed = new Throwable[1];
        Thread t = new Thread(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment usage = arena.allocate(RUSAGE_BYTES, 8);
                writeAndFree();
                long start = minorFaults(usage);
                writeAndFree();
                faults.set(minorFaults(usage) - start);
            } catch (Throwable e) {
                failed[0] = e;
            }
        });
        t.start();
        t.join();
        if (failed[0] != null) {
            throw new AssertionError(failed[0]);
        }
        return faults.get();
    }

    private static void writeAndFree() throws Throwable {
        MemorySegment block = ((MemorySegment) MALLOC.invokeExact(BLOCK)).reinterpret(BLOCK);
        assertTrue(block.address() != 0, "malloc of 24 MB failed");
        for (long at = 0; at < BLOCK; at += 4096) {
            block.set(JAVA_BYTE, at, (byte) 1);
        }
        FREE.invokeExact(block);
    }

    private static long minorFaults(MemorySegment usage) throws Throwable {
        assertEquals(0, (int) GETRUSAGE.invokeExact(RUSAGE_THREAD, usage));
        return usage.get(JAVA_LONG, RU_MINFLT);
    }
}
