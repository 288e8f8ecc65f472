package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A named ring that another user could have planted is refused by both ends: the producer does not
 * replace it, the consumer does not attach to it. Another user's file is made by giving the file to
 * {@code nobody} (the tests and CI run as root); a link's target is checked unchanged byte for byte.
 * The Python consumer's twin is clients/python/tests/test_ring_owner.py.
 */
class RingOwnerTest {
    private static final RingGeometry G = new RingGeometry(4, 8, DTYPE_UINT8, LAYOUT_HWC, 16, 16, 3);
    private final List<Path> made = new ArrayList<>();

    private Path track(Path p) {
        made.add(p);
        return p;
    }

    @AfterEach
    void cleanUp() throws IOException {
        for (Path p : made) {
            Files.deleteIfExists(p);
        }
    }

    private static boolean root() {
        return io.stoke.ffm.LibC.geteuid() == 0;
    }

    private static UserPrincipal nobody(Path p) throws IOException {
        return p.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
    }

    private static void mode(Path p, String mode) throws IOException {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(mode));
    }

    private static RingOwnerException refusedAttach(Path path, String... says) {
        RingOwnerException e = assertThrows(RingOwnerException.class, () -> ShmRing.attach(path, Duration.ZERO));
        assertTrue(e.getMessage().contains(path.toString()), e.getMessage());
        for (String part : says) {
            assertTrue(e.getMessage().contains(part), e.getMessage());
        }
        return e;
    }

    private static RingOwnerException refusedCreate(Path path, String... says) {
        RingOwnerException e = assertThrows(RingOwnerException.class, () -> ShmRing.create(path, G, null));
        assertTrue(e.getMessage().contains(path.toString()), e.getMessage());
        for (String part : says) {
            assertTrue(e.getMessage().contains(part), e.getMessage());
        }
        return e;
    }

    @Test
    void aConsumerRefusesARingOfAnotherUserOrWritableByOthersAndAttachesOnceItIsOwnedRight() throws Exception {
        Path path = ShmRingTest.shmPath("owner");
        try (ShmRing producer = ShmRing.create(path, G, null)) {
            if (root()) {
                UserPrincipal me = Files.getOwner(path);
                Files.setOwner(path, nobody(path));
                refusedAttach(path, "owned by uid 65534", "with mode 0600", "(uid 0)");
                Files.setOwner(path, me);
            }
            for (String[] m : new String[][] {{"rw-rw-rw-", "0666"}, {"rw--w----", "0620"}, {"rw-----w-", "0602"}}) {
                mode(path, m[0]);
                refusedAttach(path, "with mode " + m[1], "writable by no one else");
            }
            assertEquals(0, producer.consumerPid(), "no refused attach took the seat");
            mode(path, "rw-------");
            try (ShmRing _ = ShmRing.attach(path, Duration.ofSeconds(1))) {
                assertEquals(ProcessHandle.current().pid(), producer.consumerPid());
            }
        }
    }

    @Test
    void aProducerRefusesToReplaceAFileOfAnotherUserOrWritableByOthersAndLeavesItAsItWas() throws Exception {
        Path path = track(ShmRingTest.shmPath("owner-stale"));
        byte[] planted = "planted by another user".getBytes();
        Files.write(path, planted);
        mode(path, "rw-------");
        if (root()) {
            UserPrincipal me = Files.getOwner(path);
            Files.setOwner(path, nobody(path));
            refusedCreate(path, "owned by uid 65534", "with mode 0600");
            assertArrayEquals(planted, Files.readAllBytes(path), "the file was left as it was");
            Files.setOwner(path, me);
        }
        mode(path, "rw-rw-rw-");
        refusedCreate(path, "with mode 0666");
        assertArrayEquals(planted, Files.readAllBytes(path));
        mode(path, "rw-r--r--"); // this user's own leftover, which no one else can write: replaced
        try (ShmRing _ = ShmRing.create(path, G, null)) {
            assertEquals(G.totalLength(), Files.size(path));
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(path)));
        }
    }

    @Test
    void aLinkPlantedAtARingsPathIsFollowedByNeitherEnd() throws Exception {
        Path victim = track(ShmRingTest.shmPath("owner-victim"));
        byte[] bytes = new byte[HEADER_LENGTH * 2];
        Arrays.fill(bytes, (byte) 'x');
        Files.write(victim, bytes);
        FileTime before = Files.getLastModifiedTime(victim);
        Path link = track(ShmRingTest.shmPath("owner-link"));
        Files.createSymbolicLink(link, victim);
        refusedAttach(link, "symbolic link", victim.toString());
        refusedCreate(link, "symbolic link", victim.toString());
        assertTrue(Files.isSymbolicLink(link), "the link was left as it was");
        assertArrayEquals(bytes, Files.readAllBytes(victim), "the link's target is unchanged");
        assertEquals(before, Files.getLastModifiedTime(victim));

        // A link to a live ring: attaching through it would take that ring's seat.
        Path ringPath = ShmRingTest.shmPath("owner-live");
        try (ShmRing producer = ShmRing.create(ringPath, G, null)) {
            Path toRing = track(ShmRingTest.shmPath("owner-link-live"));
            Files.createSymbolicLink(toRing, ringPath);
            refusedAttach(toRing, "symbolic link");
            assertEquals(0, producer.consumerPid(), "the live ring's seat was not taken through the link");
        }

        // A link planted at the producer's temporary name is replaced, not written through.
        Path path = track(ShmRingTest.shmPath("owner-tmp"));
        Path tmp = track(path.resolveSibling(
                path.getFileName() + ".tmp-" + ProcessHandle.current().pid()));
        Files.createSymbolicLink(tmp, victim);
        try (ShmRing _ = ShmRing.create(path, G, null)) {
            assertEquals(G.totalLength(), Files.size(path));
        }
        assertFalse(Files.exists(tmp, LinkOption.NOFOLLOW_LINKS), "the planted temporary link is gone");
        assertArrayEquals(bytes, Files.readAllBytes(victim), "the link's target is unchanged");
    }

    @Test
    void aFifoAtARingsPathIsRefusedAtOnceByBothEnds() throws Exception {
        Path fifo = track(ShmRingTest.shmPath("owner-fifo"));
        assumeTrue(new ProcessBuilder("mkfifo", "-m", "600", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor()
                == 0);
        long start = System.nanoTime();
        refusedAttach(fifo, "not a regular file");
        refusedCreate(fifo, "not a regular file");
        assertTrue(System.nanoTime() - start < 5_000_000_000L, "refused at once, not waited on");
    }
}
