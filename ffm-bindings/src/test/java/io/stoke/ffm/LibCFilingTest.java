package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The calls a restart cache's filer writes an entry with, against what the JDK sees: {@code open}
 * with a mode makes the file the JDK would (its mode less the umask) and refuses a name that is
 * taken, a planted link included, which it never follows; {@code write} writes from native memory;
 * {@code rename} replaces a link planted at the target name, not what it points to; {@code lstat}
 * (and {@code __lxstat}, glibc's only form before 2.33) sees the link itself; {@code unlink} removes
 * a name.
 */
class LibCFilingTest {
    private static final int EEXIST = 17;
    private static final int NEW = LibC.O_WRONLY | LibC.O_CREAT | LibC.O_EXCL | LibC.O_NOFOLLOW | LibC.O_CLOEXEC;

    @TempDir
    Path tmp;

    @Test
    void openWithAModeMakesTheJdksFileAndRefusesATakenNameOrAPlantedLink() throws Exception {
        Path reference = Files.createFile(
                tmp.resolve("reference"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-r-----")));
        Path made = tmp.resolve("made");
        Path victim = Files.write(tmp.resolve("victim"), new byte[] {9, 9});
        Path link = Files.createSymbolicLink(tmp.resolve("link"), victim);
        Path dangling = Files.createSymbolicLink(tmp.resolve("dangling"), tmp.resolve("nowhere"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment callState = LibC.allocateCallState(arena);
            MemorySegment bytes = arena.allocate(100_000);
            for (int i = 0; i < bytes.byteSize(); i++) {
                bytes.set(JAVA_BYTE, i, (byte) (i * 31));
            }
            int fd = LibC.open(callState, arena.allocateFrom(made.toString()), NEW, 0640);
            assertTrue(fd >= 0, "errno " + LibC.errno(callState));
            long done = 0;
            while (done < bytes.byteSize()) {
                long wrote = LibC.write(callState, fd, bytes.asSlice(done), bytes.byteSize() - done);
                assertTrue(wrote > 0, "errno " + LibC.errno(callState));
                done += wrote;
            }
            assertEquals(0, LibC.close(fd));
            assertArrayEquals(bytes.toArray(JAVA_BYTE), Files.readAllBytes(made));
            assertEquals(Files.getPosixFilePermissions(reference), Files.getPosixFilePermissions(made));

            assertEquals(-1, LibC.open(callState, arena.allocateFrom(made.toString()), NEW, 0600));
            assertEquals(EEXIST, LibC.errno(callState));
            for (Path planted : new Path[] {link, dangling}) {
                assertEquals(
                        -1,
                        LibC.open(callState, arena.allocateFrom(planted.toString()), NEW, 0600),
                        planted.toString());
                assertEquals(EEXIST, LibC.errno(callState), planted.toString());
            }
            assertFalse(Files.exists(tmp.resolve("nowhere")), "the dangling link's target is never made");
            assertArrayEquals(new byte[] {9, 9}, Files.readAllBytes(victim));
            assertThrows(IndexOutOfBoundsException.class, () -> LibC.write(callState, 1, bytes.asSlice(0, 10), 11));
        }
    }

    @Test
    void renameReplacesALinkNotItsTargetAndLstatSeesTheLinkItselfAndUnlinkRemovesNames() throws Throwable {
        Path victim = Files.write(tmp.resolve("victim"), new byte[] {1, 2, 3});
        Path link = Files.createSymbolicLink(tmp.resolve("entry"), victim);
        Path made = Files.write(tmp.resolve("made"), new byte[] {7});
        for (String symbol : new String[] {"lstat", "__lxstat"}) {
            MethodHandle lstat = LibC.StatBinding.bind(Linker.nativeLinker().defaultLookup(), symbol);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment callState = LibC.allocateCallState(arena);
                MemorySegment buf = arena.allocate(LibC.STAT_BYTES, 8);
                assertEquals(0, (int) lstat.invokeExact(callState, arena.allocateFrom(link.toString()), buf), symbol);
                assertEquals(LibC.S_IFLNK, buf.get(JAVA_INT, LibC.ST_MODE) & LibC.S_IFMT, symbol);
                assertEquals(0, (int) lstat.invokeExact(callState, arena.allocateFrom(victim.toString()), buf), symbol);
                assertEquals(LibC.S_IFREG, buf.get(JAVA_INT, LibC.ST_MODE) & LibC.S_IFMT, symbol);
                assertEquals(-1, (int) lstat.invokeExact(callState, arena.allocateFrom(tmp + "/missing"), buf), symbol);
                assertEquals(LibC.ENOENT, LibC.errno(callState), symbol);
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment callState = LibC.allocateCallState(arena);
            MemorySegment buf = arena.allocate(LibC.STAT_BYTES, 8);
            assertEquals(0, LibC.lstat(callState, arena.allocateFrom(link.toString()), buf));
            assertEquals(LibC.S_IFLNK, buf.get(JAVA_INT, LibC.ST_MODE) & LibC.S_IFMT);

            assertEquals(
                    0,
                    LibC.rename(callState, arena.allocateFrom(made.toString()), arena.allocateFrom(link.toString())));
            assertTrue(Files.isRegularFile(link, LinkOption.NOFOLLOW_LINKS), "the link itself replaced");
            assertArrayEquals(new byte[] {7}, Files.readAllBytes(link));
            assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(victim), "its target untouched");
            assertFalse(Files.exists(made));

            assertEquals(0, LibC.unlink(callState, arena.allocateFrom(link.toString())));
            assertFalse(Files.exists(link, LinkOption.NOFOLLOW_LINKS));
            assertEquals(-1, LibC.unlink(callState, arena.allocateFrom(link.toString())));
            assertEquals(LibC.ENOENT, LibC.errno(callState));
            assertEquals(
                    -1,
                    LibC.rename(callState, arena.allocateFrom(made.toString()), arena.allocateFrom(link.toString())));
            assertEquals(LibC.ENOENT, LibC.errno(callState));
        }
    }
}
