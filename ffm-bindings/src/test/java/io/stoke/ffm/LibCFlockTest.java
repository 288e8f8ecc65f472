package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LibC#flock} locks belong to the open file, as the shard cache's locks between processes
 * must: two opens of one file in one process exclude each other, shared locks share, and closing a
 * third descriptor of the file (which drops a process's {@code fcntl} locks, and so Java's
 * {@code FileChannel.lock}) leaves them held. {@link LibC#ST_DEV} and {@link LibC#ST_INO} read what
 * the JDK reads.
 */
class LibCFlockTest {
    @TempDir
    Path tmp;

    @Test
    void flockBelongsToTheOpenFileAndSurvivesAnotherDescriptorsClose() throws Exception {
        Path file = tmp.resolve("f");
        Files.write(file, new byte[3]);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment callState = LibC.allocateCallState(arena);
            MemorySegment path = arena.allocateFrom(file.toString());
            int a = LibC.open(callState, path, LibC.O_RDONLY | LibC.O_CLOEXEC);
            int b = LibC.open(callState, path, LibC.O_RDONLY | LibC.O_CLOEXEC);
            try {
                assertEquals(0, LibC.flock(callState, a, LibC.LOCK_SH));
                assertEquals(0, LibC.flock(callState, b, LibC.LOCK_SH | LibC.LOCK_NB), "shared locks share");
                assertEquals(0, LibC.flock(callState, b, LibC.LOCK_UN));
                assertEquals(-1, LibC.flock(callState, b, LibC.LOCK_EX | LibC.LOCK_NB), "a's shared lock excludes b");
                assertEquals(LibC.EWOULDBLOCK, LibC.errno(callState));
                int c = LibC.open(callState, path, LibC.O_RDONLY | LibC.O_CLOEXEC);
                assertEquals(0, LibC.close(c));
                assertEquals(-1, LibC.flock(callState, b, LibC.LOCK_EX | LibC.LOCK_NB), "held after c's close");
                assertEquals(0, LibC.close(a));
                a = -1;
                assertEquals(0, LibC.flock(callState, b, LibC.LOCK_EX | LibC.LOCK_NB), "a's close dropped it");
                MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
                assertEquals(0, LibC.fstat(callState, b, stat));
                assertEquals(Files.getAttribute(file, "unix:ino"), stat.get(JAVA_LONG, LibC.ST_INO));
                assertEquals(Files.getAttribute(file, "unix:dev"), stat.get(JAVA_LONG, LibC.ST_DEV));
            } finally {
                if (a >= 0) {
                    LibC.close(a);
                }
                LibC.close(b);
            }
        }
    }
}
