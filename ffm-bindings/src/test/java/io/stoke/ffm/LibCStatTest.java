package io.stoke.ffm;

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
            MethodHandle stat = LibC.Stat.bind(Linker.nativeLinker().defaultLookup(), symbol);
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
}
