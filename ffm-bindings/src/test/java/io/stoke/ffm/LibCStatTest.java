package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LibC#stat} gives the size and modification time the JDK reads, through glibc's {@code stat}
 * and through {@code __xstat}, the only form glibc before 2.33 exports (this glibc has both).
 */
class LibCStatTest {
    @TempDir
    Path tmp;

    @Test
    void statAndTheOlderXstatGiveTheJdksSizeAndTime() throws Throwable {
        Path file = tmp.resolve("f");
        Files.write(file, new byte[12_345]);
        Instant when = Instant.ofEpochSecond(1_700_000_000L, 123_456_789L);
        Files.setLastModifiedTime(file, FileTime.from(when));
        for (String symbol : new String[] {"stat", "__xstat"}) {
            MethodHandle stat = LibC.StatBinding.bind(Linker.nativeLinker().defaultLookup(), symbol);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment callState = LibC.allocateCallState(arena);
                MemorySegment buf = arena.allocate(LibC.STAT_BYTES, 8);
                assertEquals(0, (int) stat.invokeExact(callState, arena.allocateFrom(file.toString()), buf), symbol);
                assertEquals(12_345, buf.get(JAVA_LONG, LibC.ST_SIZE), symbol);
                assertEquals(when.getEpochSecond(), buf.get(JAVA_LONG, LibC.ST_MTIME_SEC), symbol);
                assertEquals(when.getNano(), buf.get(JAVA_LONG, LibC.ST_MTIME_NSEC), symbol);
                assertEquals(-1, (int) stat.invokeExact(callState, arena.allocateFrom(tmp + "/missing"), buf), symbol);
            }
        }
    }

    /**
     * {@code fstat} and {@code __fxstat} give the mode, owner and group the JDK reads; {@code
     * O_NOFOLLOW} refuses a symbolic link with {@code ELOOP}, and {@code O_NONBLOCK} opens a FIFO
     * with no writer at once, where a plain open would block forever.
     */
    @Test
    void fstatGivesTheJdksModeOwnerAndGroupAndTheOpenFlagsRefuseLinksAndNeverBlock() throws Throwable {
        Path file = tmp.resolve("f");
        Files.write(file, new byte[7]);
        Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r-----"));
        Path link = tmp.resolve("link");
        Files.createSymbolicLink(link, file);
        Path fifo = tmp.resolve("fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        int uid = (Integer) Files.getAttribute(file, "unix:uid");
        int gid = (Integer) Files.getAttribute(file, "unix:gid");
        assertEquals(uid, LibC.geteuid());
        for (String symbol : new String[] {"fstat", "__fxstat"}) {
            MethodHandle fstat = LibC.StatBinding.bindF(Linker.nativeLinker().defaultLookup(), symbol);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment callState = LibC.allocateCallState(arena);
                MemorySegment buf = arena.allocate(LibC.STAT_BYTES, 8);
                int flags = LibC.O_RDONLY | LibC.O_CLOEXEC | LibC.O_NOFOLLOW | LibC.O_NONBLOCK;
                int fd = LibC.open(callState, arena.allocateFrom(file.toString()), flags);
                assertTrue(fd >= 0, symbol);
                try {
                    assertEquals(0, (int) fstat.invokeExact(callState, fd, buf), symbol);
                } finally {
                    LibC.close(fd);
                }
                int mode = buf.get(JAVA_INT, LibC.ST_MODE);
                assertEquals(LibC.S_IFREG, mode & LibC.S_IFMT, symbol);
                assertEquals(0640, mode & 07777, symbol);
                assertEquals(uid, buf.get(JAVA_INT, LibC.ST_UID), symbol);
                assertEquals(gid, buf.get(JAVA_INT, LibC.ST_GID), symbol);
                assertEquals(7, buf.get(JAVA_LONG, LibC.ST_SIZE), symbol);

                assertEquals(-1, LibC.open(callState, arena.allocateFrom(link.toString()), flags), symbol);
                assertEquals(LibC.ELOOP, LibC.errno(callState), symbol);

                int f = LibC.open(callState, arena.allocateFrom(fifo.toString()), flags);
                assertTrue(f >= 0, symbol);
                try {
                    assertEquals(0, (int) fstat.invokeExact(callState, f, buf), symbol);
                    assertNotEquals(LibC.S_IFREG, buf.get(JAVA_INT, LibC.ST_MODE) & LibC.S_IFMT, symbol);
                } finally {
                    LibC.close(f);
                }
            }
        }
    }
}
