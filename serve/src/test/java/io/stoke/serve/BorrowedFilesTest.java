package io.stoke.serve;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.LibC;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link BorrowedFiles#reopened}: the loader's files, named {@code /dev/fd/N} of the Python process, are
 * opened through {@code /proc/PID/fd/N} and named by this process's own descriptors; here the
 * "Python process" is this JVM itself, whose descriptors are as reachable through /proc.
 */
class BorrowedFilesTest {
    private static final Pattern FD = Pattern.compile("/dev/fd/(\\d+)");
    private static final long PID = ProcessHandle.current().pid();

    @Test
    void anAnonymousFileIsTheSameFileThroughTheNewDescriptorWhereverItIsNamed() throws IOException {
        try (AnonymousFile ring = AnonymousFile.create("prestart-test-ring")) {
            int theirs = Integer.parseInt(ring.path().getFileName().toString());
            Files.writeString(ring.path(), "the loader's bytes");
            String[] args = BorrowedFiles.reopened(
                    PID, List.of("serve", "/dev/fd/" + theirs, "--ring", "/dev/fd/" + theirs, "@/dev/fd/" + theirs));
            assertEquals("serve", args[0]);
            int mine = fd(args[1]);
            assertNotEquals(theirs, mine, "a descriptor of this process's own");
            assertEquals("/dev/fd/" + mine, args[3], "one descriptor for one file, however often it is named");
            assertEquals("@/dev/fd/" + mine, args[4], "inside an argument too (picocli's @-file)");
            assertEquals("the loader's bytes", Files.readString(Path.of(args[1])));
            Files.writeString(Path.of(args[1]), "the producer's bytes");
            assertEquals(
                    "the producer's bytes", Files.readString(ring.path()), "written through it, read by the loader");
            assertEquals(2, accessMode(mine), "read and write, as an inherited descriptor");
            LibC.close(mine);
        }
    }

    @Test
    void aPipeIsOpenedForReadingOnlySoThatItsReaderStillSeesItsEnd(@TempDir Path dir) throws Exception {
        Path fifo = dir.resolve("order-feed");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = LibC.allocateCallState(arena);
            // Both ends in one descriptor, without blocking: the loader's write end and its reader's.
            int theirs = LibC.open(state, arena.allocateFrom(fifo.toString()), LibC.O_RDWR | LibC.O_NONBLOCK);
            assertTrue(theirs >= 0, "opened the FIFO");
            try {
                int mine = fd(BorrowedFiles.reopened(PID, List.of("serve", "--order-feed", "/dev/fd/" + theirs))[2]);
                assertEquals(0, accessMode(mine), "read only: no writer is added");
                byte[] record = "{\"epoch\":0}\n".getBytes(StandardCharsets.US_ASCII);
                Files.write(Path.of("/dev/fd/" + theirs), record); // the loader writes an epoch's order
                byte[] read = new byte[record.length];
                try (var in = Files.newInputStream(Path.of("/dev/fd/" + mine))) {
                    assertEquals(record.length, in.readNBytes(read, 0, read.length));
                }
                assertArrayEquals(record, read, "what the loader writes, read through the new descriptor");
                LibC.close(mine);
            } finally {
                LibC.close(theirs);
            }
        }
    }

    @Test
    void aDescriptorTheProcessDoesNotHaveIsNamedInTheRefusalAndThoseOpenedBeforeItAreClosed() throws IOException {
        try (AnonymousFile ring = AnonymousFile.create("prestart-test-ring")) {
            long before = openDescriptors();
            IOException e = assertThrows(
                    IOException.class,
                    () -> BorrowedFiles.reopened(
                            PID,
                            List.of("serve", "--ring", "/dev/fd/" + ring.path().getFileName(), "/dev/fd/999999")));
            assertTrue(e.getMessage().contains("/proc/" + PID + "/fd/999999"), e.getMessage());
            assertEquals(before, openDescriptors(), "the ring's new descriptor was closed with the refusal");
        }
    }

    private static long openDescriptors() throws IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    @Test
    void argumentsWithoutDescriptorsAreKept() throws IOException {
        List<String> args = List.of("serve", "/data/train", "--batch-size", "64", "--ring", "/dev/shm/x");
        assertArrayEquals(args.toArray(String[]::new), BorrowedFiles.reopened(PID, args));
    }

    private static int fd(String path) {
        Matcher m = FD.matcher(path);
        assertTrue(m.find(), path);
        return Integer.parseInt(m.group(1));
    }

    /** The descriptor's access mode from /proc/self/fdinfo: 0 read only, 1 write only, 2 both. */
    private static int accessMode(int fd) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
            if (line.startsWith("flags:")) {
                return Integer.parseInt(line.substring("flags:".length()).trim(), 8) & 3;
            }
        }
        throw new IOException("no flags in /proc/self/fdinfo/" + fd);
    }
}
