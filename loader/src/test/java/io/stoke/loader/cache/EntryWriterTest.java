package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.LibC;
import io.stoke.loader.internal.SafeFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An {@link EntryWriter} writes an entry under a temporary name that the folder's walk reads as
 * this process's ({@link SafeFiles#temporaryOwner}), beside the entry, a new one each time; renames
 * it into place whole; leaves nothing when told to discard it; and makes nothing where the entry's
 * folder is gone.
 */
class EntryWriterTest {
    private static final long KEY = 0x3a0123456789abcdL;

    @TempDir
    Path tmp;

    private final List<String> said = new ArrayList<>();

    @Test
    void anEntryIsWrittenUnderATemporaryNameOfThisProcessThenRenamedWhole() throws Exception {
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add);
                EntryWriter writer = cache.newWriter();
                Arena arena = Arena.ofConfined()) {
            Path folder = Files.createDirectories(tmp.resolve("cache").resolve("3a"));
            Path entry = folder.resolve("3a0123456789abcd.stc");
            writer.name(KEY);
            assertEquals(entry.toString(), writer.entryPath().getString(0));
            assertEquals(0, writer.entryType(), "nothing there yet");
            MemorySegment head = arena.allocate(100);
            MemorySegment content = arena.allocate(70_000);
            for (int i = 0; i < content.byteSize(); i++) {
                content.set(JAVA_BYTE, i, (byte) (i * 7));
            }
            head.set(JAVA_BYTE, 0, (byte) 42);
            assertEquals(0, writer.write(head, 64, content, 70_000));
            Path temporary = onlyFile(folder);
            assertEquals(ProcessHandle.current().pid(), SafeFiles.temporaryOwner(temporary), temporary.toString());
            assertTrue(temporary.getFileName().toString().startsWith(".3a0123456789abcd.stc."), temporary.toString());
            assertEquals(70_064, Files.size(temporary));

            writer.publish();
            assertEquals(LibC.S_IFREG, writer.entryType());
            assertEquals(entry, onlyFile(folder), "renamed: no temporary file left");
            byte[] bytes = Files.readAllBytes(entry);
            assertEquals(42, bytes[0]);
            assertArrayEquals(content.toArray(JAVA_BYTE), java.util.Arrays.copyOfRange(bytes, 64, bytes.length));

            writer.name(KEY);
            assertEquals(0, writer.write(head, 64, MemorySegment.NULL, 0));
            Path second =
                    Files.list(folder).filter(p -> !p.equals(entry)).findFirst().orElseThrow();
            assertNotEquals(temporary, second, "a new temporary name each time");
            writer.discardTemporary();
            assertEquals(entry, onlyFile(folder), "discarded");
        }
        // (A build without the region decoder says so once when the cache opens; nothing else is said.)
        assertTrue(said.stream().noneMatch(line -> line.contains("could not write")), said.toString());
    }

    @Test
    void aGoneFolderMakesNothingAndATakenTemporaryNameIsAnError() throws Exception {
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add);
                EntryWriter writer = cache.newWriter();
                Arena arena = Arena.ofConfined()) {
            writer.name(KEY);
            assertEquals(LibC.ENOENT, writer.write(arena.allocate(64), 64, MemorySegment.NULL, 0));
            assertFalse(Files.exists(tmp.resolve("cache").resolve("3a")));

            Path folder = Files.createDirectories(tmp.resolve("cache").resolve("3a"));
            assertEquals(0, writer.write(arena.allocate(64), 64, MemorySegment.NULL, 0));
            // The same temporary name again (never drawn twice, but planted there): O_EXCL refuses it.
            IOException taken =
                    assertThrows(IOException.class, () -> writer.write(arena.allocate(64), 64, MemorySegment.NULL, 0));
            assertTrue(
                    taken.getMessage().startsWith("cannot create " + folder + "/.3a0123456789abcd.stc."),
                    taken.getMessage());
            writer.discardTemporary();
            try (Stream<Path> left = Files.list(folder)) {
                assertEquals(0, left.count());
            }
        }
    }

    private static Path onlyFile(Path folder) throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            List<Path> all = files.toList();
            assertEquals(1, all.size(), all.toString());
            return all.get(0);
        }
    }
}
