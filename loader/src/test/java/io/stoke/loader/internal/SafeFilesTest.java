package io.stoke.loader.internal;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.fs.FolderAccess;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A link or a FIFO planted where Stoke writes or reads is never followed nor waited on, and what it
 * makes has the folder's modes, checked with the JDK's own reading of the file.
 */
class SafeFilesTest {
    @TempDir
    Path tmp;

    @Test
    void aNewFileRefusesAPlantedLinkAndLeavesItsTargetAlone() throws IOException {
        Path victim = tmp.resolve("victim");
        Files.writeString(victim, "precious");
        Path link = tmp.resolve("entry");
        Files.createSymbolicLink(link, victim);
        assertThrows(FileAlreadyExistsException.class, () -> SafeFiles.createNew(link, FolderAccess.PRIVATE));
        assertEquals("precious", Files.readString(victim));

        Path fresh = tmp.resolve("fresh");
        try (FileChannel ch = SafeFiles.createNew(fresh, FolderAccess.PRIVATE)) {
            ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
        }
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(fresh)));
        assertEquals(3, Files.size(fresh));
    }

    @Test
    void anAtomicWriteReplacesAPlantedLinkNotItsTarget() throws IOException {
        Path victim = tmp.resolve("victim");
        Files.writeString(victim, "precious");
        Path index = tmp.resolve("index.json");
        Files.createSymbolicLink(index, victim);
        // A link planted at the name a temporary file might take is not followed either: the name is
        // this process's and random, and made with O_EXCL.
        SafeFiles.writeAtomically(index, FolderAccess.PRIVATE, "{}".getBytes(StandardCharsets.UTF_8));
        assertEquals("precious", Files.readString(victim));
        assertFalse(Files.isSymbolicLink(index));
        assertEquals("{}", Files.readString(index));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(index)));
        try (var listing = Files.list(tmp)) {
            assertEquals(2, listing.count(), "no temporary file left");
        }
    }

    @Test
    void aFailedWriteLeavesNothingBehind() throws IOException {
        Path target = tmp.resolve("out");
        IOException thrown = assertThrows(
                IOException.class,
                () -> SafeFiles.writeAtomically(target, FolderAccess.PRIVATE, ch -> {
                    ch.write(ByteBuffer.wrap(new byte[10]));
                    throw new IOException("disk full");
                }));
        assertEquals("disk full", thrown.getMessage());
        try (var listing = Files.list(tmp)) {
            assertEquals(0, listing.count());
        }
    }

    @Test
    void readingRefusesALinkAndAFifoAtOnce() throws Exception {
        Path victim = tmp.resolve("victim");
        Files.writeString(victim, "precious");
        Path link = tmp.resolve("link");
        Files.createSymbolicLink(link, victim);
        IOException linkRefused = assertThrows(IOException.class, () -> SafeFiles.openRegular(link));
        assertTrue(linkRefused.getMessage().contains(link + " is a symbolic link"), linkRefused.getMessage());

        Path fifo = tmp.resolve("fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor(5, TimeUnit.SECONDS) ? 0 : 1);
        assertTrue(Files.exists(fifo, LinkOption.NOFOLLOW_LINKS));
        // A plain open of a FIFO with no writer blocks forever; this one returns at once.
        IOException fifoRefused = assertTimeoutPreemptively(
                java.time.Duration.ofSeconds(10),
                () -> assertThrows(IOException.class, () -> SafeFiles.openRegular(fifo)));
        assertEquals(
                fifo + " is a FIFO, not a regular file: Stoke reads only regular files here", fifoRefused.getMessage());

        try (FileChannel ch = SafeFiles.openRegular(victim)) {
            ByteBuffer b = ByteBuffer.allocate(16);
            ch.read(b, 0);
            assertEquals("precious", new String(b.array(), 0, b.position(), StandardCharsets.UTF_8));
        }
        assertThrows(java.nio.file.NoSuchFileException.class, () -> SafeFiles.openRegular(tmp.resolve("missing")));
    }

    /**
     * A file that cannot be opened to write (a read-only mount; here sysfs, which refuses every
     * user, root too) is named by its own path, not by /proc's link to the descriptor it was
     * checked through.
     */
    @Test
    void aFileThatCannotBeWrittenIsNamedByItsOwnPath() {
        Path readOnly = Path.of("/sys/devices/system/cpu/online");
        assertTrue(Files.isRegularFile(readOnly), readOnly + ": a Linux machine has it");
        IOException refused = assertThrows(IOException.class, () -> SafeFiles.openRegularToChange(readOnly));
        assertEquals("cannot open " + readOnly + " to write: Permission denied", refused.getMessage());
    }
}
