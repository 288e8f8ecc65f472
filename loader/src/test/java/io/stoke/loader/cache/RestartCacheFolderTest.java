package io.stoke.loader.cache;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.LibC;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The restart cache's folder on a shared machine: what it makes is its user's alone (modes read
 * back by the JDK), a link or a FIFO planted at an entry's name or at the usage count's is never
 * followed nor waited on (the epoch is the uncached one, the link's target keeps its bytes, and the
 * planted thing is named), and another user's folder is refused unless shared on purpose.
 */
// A thread of its own: a worker that waits on a FIFO is blocked in open(2), deaf to interrupts, and
// the test must fail rather than wait with it.
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class RestartCacheFolderTest {
    private static final int NOBODY = 65534;
    private static final byte[] PRECIOUS = "precious, not Stoke's".getBytes(java.nio.charset.StandardCharsets.UTF_8);

    @TempDir
    Path tmp;

    private final List<String> said = new CopyOnWriteArrayList<>();

    @BeforeEach
    void needsTheLibrary() {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
    }

    /** 12 JPEGs in 2 classes. */
    private Dataset data() throws IOException {
        Path root = tmp.resolve("data");
        for (int i = 0; i < 12; i++) {
            Path dir = Files.createDirectories(root.resolve("c" + i % 2));
            int w = 48 + 8 * i;
            int h = 40 + 4 * i;
            Files.write(
                    dir.resolve("i" + i + ".jpg"),
                    TestImages.jpeg(TestImages.rgb(w, h, i), w, h, 3, 85, TurboJpeg.TJSAMP_420, 0));
        }
        return ImageFolder.scan(root);
    }

    private static List<String> epoch(Dataset d, long epoch, RestartCache cache) {
        List<String> out = new ArrayList<>();
        try (Loader l = Loader.builder(d)
                .transform(TransformSpec.defaults().withResize(32, 32))
                .batchSize(4)
                .workers(2)
                .startEpoch(epoch)
                .restartCache(cache)
                .build()) {
            for (Batch b : l) {
                try (b) {
                    out.add(BatchSums.of(b));
                }
            }
        }
        return out;
    }

    private static List<Path> entries(Path cache) throws IOException {
        try (Stream<Path> s = Files.walk(cache)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".stc"))
                    .sorted()
                    .toList();
        }
    }

    private static String mode(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS));
    }

    /** The entries of {@code dir}, filled by one epoch of {@code d}. */
    private List<Path> filled(Dataset d, Path dir) throws Exception {
        try (RestartCache cache = RestartCache.open(dir, 1L << 30, said::add)) {
            epoch(d, 0, cache);
            assertTrue(cache.awaitFilled(60_000));
        }
        return entries(dir);
    }

    private static void mkfifo(Path at) throws Exception {
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", at.toString()).inheritIO().start().waitFor());
    }

    @Test
    void theFolderItsSubfoldersAndEntriesAreTheUsersAlone() throws Exception {
        Dataset d = data();
        Path dir = tmp.resolve("made/here/cache");
        try (RestartCache cache = RestartCache.open(dir, 1L << 30, said::add)) {
            epoch(d, 0, cache);
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(12, cache.stats().copied(), cache.stats().toString());
        }
        assertEquals("rwx------", mode(dir));
        List<Path> entries = entries(dir);
        assertEquals(12, entries.size());
        for (Path entry : entries) {
            assertEquals("rw-------", mode(entry), entry.toString());
            assertEquals("rwx------", mode(entry.getParent()), entry.getParent().toString());
        }
        assertEquals("rw-------", mode(dir.resolve(FolderUsage.NAME)));
        assertEquals(List.of(), said);
    }

    /**
     * A link to a file of someone else's at one entry's name, a FIFO at another's, in a folder the
     * cache filled before: both are misses read from the originals, said once, never followed nor
     * waited on (a plain open of a FIFO waits for a writer forever), and the filler files real
     * entries over them; the link's target keeps its bytes.
     */
    @Test
    void aLinkOrAFifoAtAnEntrysNameIsAMissSaidOnceAndReplaced() throws Exception {
        Dataset d = data();
        Path dir = tmp.resolve("cache");
        List<String> uncached = epoch(d, 1, null);
        List<Path> entries = filled(d, dir);
        Path linked = entries.get(3);
        Path fifo = entries.get(7);
        Path victim = tmp.resolve("victim");
        Files.write(victim, PRECIOUS);
        Files.delete(linked);
        Files.createSymbolicLink(linked, victim);
        Files.delete(fifo);
        mkfifo(fifo);

        try (RestartCache cache = RestartCache.open(dir, 1L << 30, said::add)) {
            assertEquals(uncached, epoch(d, 1, cache));
            RestartCache.Stats s = cache.stats();
            assertEquals(2, s.misses(), s.toString());
            assertEquals(10, s.hits(), s.toString());
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(uncached, epoch(d, 1, cache));
            assertEquals(2, cache.stats().misses(), "then read from the entries made over them: " + cache.stats());
        }
        assertArrayEquals(PRECIOUS, Files.readAllBytes(victim), "the link's target is unchanged");
        assertTrue(Files.isRegularFile(linked, LinkOption.NOFOLLOW_LINKS), "the link replaced by an entry");
        assertTrue(Files.isRegularFile(fifo, LinkOption.NOFOLLOW_LINKS), "the FIFO replaced by an entry");
        assertEquals("rw-------", mode(linked));
        assertEquals(1, said.size(), "said once: " + said);
        String planted = said.get(0);
        assertTrue(planted.startsWith("WARNING: the restart cache found "), planted);
        assertTrue(planted.contains("a symbolic link at " + linked) || planted.contains("a FIFO at " + fifo), planted);
        assertTrue(planted.contains("not followed, the original is read"), planted);
    }

    /**
     * A folder at an entry's name, with a file in it: a miss read from the original every epoch,
     * said once, left as it is with its file; the cache goes on filing the other entries.
     */
    @Test
    void aFolderAtAnEntrysNameIsLeftAndTheOtherEntriesAreFiled() throws Exception {
        Dataset d = data();
        Path dir = tmp.resolve("cache");
        List<String> uncached = epoch(d, 1, null);
        List<Path> entries = filled(d, dir);
        Path folder = entries.get(5);
        Path other = entries.get(6);
        Files.delete(folder);
        Files.createDirectory(folder);
        Files.write(folder.resolve("kept"), PRECIOUS);
        Files.delete(other);

        try (RestartCache cache = RestartCache.open(dir, 1L << 30, said::add)) {
            assertEquals(uncached, epoch(d, 1, cache));
            assertEquals(2, cache.stats().misses(), "the folder and the removed entry: " + cache.stats());
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(uncached, epoch(d, 1, cache));
            assertEquals(3, cache.stats().misses(), "then the folder alone: " + cache.stats());
            assertFalse(cache.stats().full(), "the cache goes on filing: " + cache.stats());
        }
        assertTrue(Files.isRegularFile(other, LinkOption.NOFOLLOW_LINKS), "the removed entry made again");
        assertArrayEquals(PRECIOUS, Files.readAllBytes(folder.resolve("kept")), "the folder left as it is");
        assertEquals(1, said.size(), "said once: " + said);
        assertTrue(said.get(0).contains("a folder at " + folder), said.get(0));
    }

    /**
     * A FIFO at the usage count's name: the filler names it and writes nothing, the workers read the
     * originals, and the run ends; a link there leaves its target's bytes as they were.
     */
    @Test
    void aFifoOrALinkAtTheUsageCountIsNamedAndTheRunEnds() throws Exception {
        Dataset d = data();
        List<String> uncached = epoch(d, 0, null);

        Path fifoDir = Files.createDirectories(tmp.resolve("fifo"));
        Path fifo = fifoDir.resolve(FolderUsage.NAME);
        mkfifo(fifo);
        Path linkDir = Files.createDirectories(tmp.resolve("link"));
        Path victim = tmp.resolve("victim");
        Files.write(victim, PRECIOUS);
        Path link = Files.createSymbolicLink(linkDir.resolve(FolderUsage.NAME), victim);

        for (Path dir : List.of(fifoDir, linkDir)) {
            said.clear();
            try (RestartCache cache = RestartCache.open(dir, 1L << 30, said::add)) {
                assertEquals(uncached, epoch(d, 0, cache));
                assertTrue(cache.awaitFilled(60_000));
                assertEquals(0, cache.stats().copied(), cache.stats().toString());
                assertFalse(cache.stats().full(), "not full: failed " + cache.stats());
                assertNotNull(cache.stats().failure(), "it writes nothing more, and says why: " + cache.stats());
            }
            assertEquals(List.of(), entries(dir), "no entry written past a count it cannot keep");
            assertEquals(1, said.size(), said.toString());
            String message = said.get(0);
            assertTrue(message.startsWith("WARNING: the restart cache cannot use " + dir), message);
            assertTrue(
                    message.contains(
                            dir == fifoDir
                                    ? fifo + " is a FIFO, not a regular file"
                                    : link + " is a symbolic link, which Stoke does not follow"),
                    message);
        }
        assertArrayEquals(PRECIOUS, Files.readAllBytes(victim), "the link's target is unchanged");
    }

    @Test
    void anotherUsersFolderIsRefusedAndUsedWhenSharedWithItsGroupOnPurpose() throws Exception {
        Assumptions.assumeTrue(LibC.geteuid() == 0, "needs root to give a folder to another user (CI runs as root)");
        Path dir = Files.createDirectory(tmp.resolve("theirs"));
        Files.setAttribute(dir, "unix:uid", NOBODY);
        Files.setAttribute(dir, "unix:gid", 0);
        Files.setAttribute(dir, "unix:mode", 02770);
        IllegalArgumentException refused =
                assertThrows(IllegalArgumentException.class, () -> RestartCache.open(dir, 1L << 30, said::add));
        assertTrue(
                refused.getMessage()
                        .startsWith("refusing " + dir + " as the restart cache: it belongs to nobody (uid 65534)"),
                refused.getMessage());
        assertTrue(refused.getMessage().contains("--cache-shared-with GROUP"), refused.getMessage());

        Dataset d = data();
        FolderAccess root = FolderAccess.sharedWith("root");
        try (RestartCache cache = RestartCache.open(dir, 1L << 30, root, said::add)) {
            assertEquals(epoch(d, 0, null), epoch(d, 0, cache));
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(12, cache.stats().copied());
        }
        for (Path entry : entries(dir)) {
            assertEquals("rw-r-----", mode(entry), entry.toString());
            assertEquals(02770, (Integer) Files.getAttribute(entry.getParent(), "unix:mode") & 07777);
        }
        assertEquals(List.of(), said);
    }
}
