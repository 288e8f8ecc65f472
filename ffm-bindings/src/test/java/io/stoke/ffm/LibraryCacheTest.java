package io.stoke.ffm;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LibraryCache} against the file system as {@code stat} reports it: the folders it makes and
 * their modes, the copy reused by a second call and by racing callers, and every folder or file it
 * must not trust refused with the path and the reason, the planted target left as it was.
 */
class LibraryCacheTest {
    @TempDir
    Path tmp;

    private final byte[] bytes = randomBytes(70_000, 1);

    @Test
    void makesOneFolderNamedByTheBytesWithPrivateModesAndReusesIt() throws IOException {
        Path base = tmp.resolve("cache"); // made too, as ~/.cache may be missing
        LibraryCache cache = new LibraryCache(base);
        Path file = cache.file("libx.so", bytes);
        Path folder = base.resolve("stoke/native").resolve(LibraryCache.sha256(bytes));
        assertEquals(folder.resolve("libx.so"), file);
        assertArrayEquals(bytes, Files.readAllBytes(file));
        assertEquals("rwx------", mode(base.resolve("stoke")));
        assertEquals("rwx------", mode(base.resolve("stoke/native")));
        assertEquals("rwx------", mode(folder));
        assertEquals("r-x------", mode(file));
        Object inode = Files.readAttributes(file, "unix:ino").get("ino");
        assertEquals(file, cache.file("libx.so", bytes));
        assertEquals(inode, Files.readAttributes(file, "unix:ino").get("ino"), "the copy was written again");
        // Other bytes, another folder; no temporary folder left beside them.
        Path other = cache.file("libx.so", randomBytes(5_000, 2));
        assertNotEquals(file.getParent(), other.getParent());
        assertEquals(
                2,
                list(base.resolve("stoke/native")).size(),
                list(base.resolve("stoke/native")).toString());
    }

    @Test
    void anExtractionAbandonedByAKilledProcessIsRemovedOnceItIsAMinuteOld() throws IOException {
        Path root = Files.createDirectories(tmp.resolve("stoke/native"));
        String prefix = "." + LibraryCache.sha256(bytes) + ".tmp-";
        Path old = Files.createDirectory(root.resolve(prefix + "killed"));
        Files.write(old.resolve("libx.so"), new byte[10]); // cut short
        Files.setLastModifiedTime(old, FileTime.fromMillis(System.currentTimeMillis() - 61_000));
        Path young = Files.createDirectory(root.resolve(prefix + "extracting")); // another process, now
        Path otherLibrary = Files.createDirectory(root.resolve(".0123.tmp-killed"));
        Files.setLastModifiedTime(otherLibrary, FileTime.fromMillis(System.currentTimeMillis() - 61_000));
        new LibraryCache(tmp).file("libx.so", bytes);
        assertEquals(
                Set.of(".0123.tmp-killed", young.getFileName().toString(), LibraryCache.sha256(bytes)),
                Set.copyOf(list(root)));
    }

    @Test
    void racingCallersGetTheOneCopyThatWasRenamedFirst() throws Exception {
        LibraryCache cache = new LibraryCache(tmp);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Path>> got = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                got.add(pool.submit((Callable<Path>) () -> cache.file("libx.so", bytes)));
            }
            for (Future<Path> f : got) {
                assertEquals(got.get(0).get(), f.get());
            }
        } finally {
            pool.shutdown();
        }
        assertEquals(List.of(LibraryCache.sha256(bytes)), list(tmp.resolve("stoke/native")));
    }

    @Test
    void aSymbolicLinkInPlaceOfTheFolderIsRefusedAndItsTargetLeftAlone() throws IOException {
        Path elsewhere = Files.createDirectory(tmp.resolve("elsewhere"));
        Files.write(elsewhere.resolve("libx.so"), new byte[] {1, 2, 3});
        Path root = Files.createDirectories(tmp.resolve("cache/stoke/native"));
        Path link = Files.createSymbolicLink(root.resolve(LibraryCache.sha256(bytes)), elsewhere);
        assertRefused(new LibraryCache(tmp.resolve("cache")), link + " is a symbolic link");
        assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(elsewhere.resolve("libx.so")));
        // And a link at stoke/ itself.
        Files.createDirectories(tmp.resolve("other/real"));
        Files.createSymbolicLink(tmp.resolve("other/stoke"), tmp.resolve("other/real"));
        assertRefused(new LibraryCache(tmp.resolve("other")), tmp.resolve("other/stoke") + " is a symbolic link");
        assertEquals(List.of(), list(tmp.resolve("other/real")));
    }

    @Test
    void aFolderOrLibraryOthersCanWriteIsRefused() throws IOException {
        LibraryCache cache = new LibraryCache(tmp);
        Path file = cache.file("libx.so", bytes);
        Files.setPosixFilePermissions(file.getParent(), PosixFilePermissions.fromString("rwxrwxrwx"));
        assertRefused(cache, file.getParent() + " can be written by other users (mode 777)");
        Files.setPosixFilePermissions(file.getParent(), PosixFilePermissions.fromString("rwx------"));
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxrw----"));
        assertRefused(cache, file + " can be written by other users (mode 760)");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r-x------"));
        Files.setPosixFilePermissions(tmp.resolve("stoke"), PosixFilePermissions.fromString("rwxrwx---"));
        assertRefused(cache, tmp.resolve("stoke") + " can be written by other users (mode 770)");
    }

    @Test
    void aBaseFolderOthersCanWriteIsRefusedUnlessItIsSticky() throws IOException {
        Path base = Files.createDirectory(tmp.resolve("shared"));
        Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertRefused(new LibraryCache(base), base + " can be written by other users (mode 777)");
        Files.setAttribute(base, "unix:mode", 01777); // as /tmp: others cannot rename what is ours
        assertArrayEquals(bytes, Files.readAllBytes(new LibraryCache(base).file("libx.so", bytes)));
    }

    @Test
    void aFolderOfAnotherUserIsRefused() throws IOException {
        assumeTrue(LibraryCacheTest.root(), "giving a folder to another user needs root");
        LibraryCache cache = new LibraryCache(tmp);
        Path file = cache.file("libx.so", bytes);
        Files.setAttribute(file.getParent(), "unix:uid", 65534, LinkOption.NOFOLLOW_LINKS);
        assertRefused(cache, file.getParent() + " belongs to user 65534, not to this user (0)");
        Files.setAttribute(file.getParent(), "unix:uid", 0, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(file, "unix:uid", 65534, LinkOption.NOFOLLOW_LINKS);
        assertRefused(cache, file + " belongs to user 65534, not to this user (0)");
    }

    @Test
    void aDamagedCopyIsRefused() throws IOException {
        LibraryCache cache = new LibraryCache(tmp);
        Path file = cache.file("libx.so", bytes);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        byte[] damaged = bytes.clone();
        damaged[1234] ^= 1;
        Files.write(file, damaged);
        assertRefused(cache, file + " does not hold the library this jar carries");
    }

    @Test
    void aFolderOfLibrariesIsMadeOnceNamedByTheirSizesAndCrcsAndADamagedOneIsRefused() throws IOException {
        LibraryCache cache = new LibraryCache(tmp);
        byte[] other = randomBytes(9_000, 3);
        int[] reads = new int[1];
        Map<String, LibraryCache.Contents> files = new TreeMap<>();
        files.put("liba.so", LibraryCache.Contents.of(() -> {
            reads[0]++;
            return new ByteArrayInputStream(bytes);
        }));
        files.put("libb.so", LibraryCache.Contents.of(() -> new ByteArrayInputStream(other)));
        reads[0] = 0;
        Path folder = cache.folder(files);
        assertEquals(tmp.resolve("stoke/native"), folder.getParent());
        assertEquals(List.of("liba.so", "libb.so"), list(folder));
        assertArrayEquals(bytes, Files.readAllBytes(folder.resolve("liba.so")));
        assertArrayEquals(other, Files.readAllBytes(folder.resolve("libb.so")));
        assertEquals("rwx------", mode(folder));
        assertEquals("r-x------", mode(folder.resolve("libb.so")));
        assertEquals(1, reads[0], "read once, to make the folder");
        Object inode =
                Files.readAttributes(folder.resolve("liba.so"), "unix:ino").get("ino");
        assertEquals(folder, cache.folder(files));
        assertEquals(1, reads[0], "a folder made is checked against the sizes and CRCs, not read from the jar again");
        assertEquals(
                inode,
                Files.readAttributes(folder.resolve("liba.so"), "unix:ino").get("ino"));
        // Another CRC, another folder: a newer jar never opens an older library.
        Map<String, LibraryCache.Contents> newer = new TreeMap<>(files);
        newer.put("libb.so", LibraryCache.Contents.of(() -> new ByteArrayInputStream(randomBytes(9_000, 4))));
        assertNotEquals(folder, cache.folder(newer));
        // The same size, one bit changed on disk: refused, naming the file.
        Path b = folder.resolve("libb.so");
        Files.setPosixFilePermissions(b, PosixFilePermissions.fromString("rw-------"));
        byte[] damaged = other.clone();
        damaged[77] ^= 1;
        Files.write(b, damaged);
        Files.setPosixFilePermissions(b, PosixFilePermissions.fromString("r-x------"));
        IOException e = assertThrows(IOException.class, () -> cache.folder(files));
        assertTrue(e.getMessage().startsWith(b + " does not hold the library this jar carries"), e.getMessage());
    }

    private static void assertRefused(LibraryCache cache, String message) {
        IOException e = assertThrows(IOException.class, () -> cache.file("libx.so", new LibraryCacheTest().bytes));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }

    private static String mode(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS));
    }

    private static List<String> list(Path folder) throws IOException {
        try (Stream<Path> s = Files.list(folder)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static byte[] randomBytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static boolean root() {
        return "root".equals(System.getProperty("user.name"));
    }
}
