package io.stoke.loader.internal;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.LibC;
import io.stoke.loader.fs.FolderAccess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cache folder is made private, and one that another user could read or plant into is refused in
 * one sentence naming it, its owner and its mode; modes are read back with the JDK's own stat.
 */
class CacheFolderTest {
    private static final int NOBODY = 65534;

    @TempDir
    Path tmp;

    @Test
    void aMissingFolderIsMadeForItsUserAlone() throws IOException {
        Path dir = tmp.resolve("a/b/cache");
        assertEquals(dir, CacheFolder.open(dir, FolderAccess.PRIVATE, "the shard cache"));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        assertEquals(LibC.geteuid(), (Integer) Files.getAttribute(dir, "unix:uid"));
        // Made by this user before: used again as it is.
        assertEquals(dir, CacheFolder.open(dir, FolderAccess.PRIVATE, "the shard cache"));
    }

    @Test
    void aFolderAnyoneCanWriteIsRefused() throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("open"));
        Files.setAttribute(dir, "unix:mode", 01777);
        IOException refused =
                assertThrows(IOException.class, () -> CacheFolder.open(dir, FolderAccess.PRIVATE, "the shard cache"));
        assertTrue(
                refused.getMessage()
                        .startsWith("refusing " + dir + " as the shard cache: any user can write it (mode 1777)"),
                refused.getMessage());
        assertTrue(refused.getMessage().contains("--cache-shared-with GROUP"), refused.getMessage());
        // Shared on purpose or not, a folder any user can write is never used.
        assertThrows(
                IOException.class, () -> CacheFolder.open(dir, FolderAccess.sharedWith("root"), "the shard cache"));
    }

    @Test
    void aFolderOfAnotherUserIsRefusedUnlessSharedWithItsGroupOnPurpose() throws IOException {
        assumeTrue(LibC.geteuid() == 0, "needs root to give a folder to another user (CI runs as root)");
        Path dir = Files.createDirectory(tmp.resolve("theirs"));
        Files.setAttribute(dir, "unix:uid", NOBODY);
        Files.setAttribute(dir, "unix:mode", 0700);
        IOException refused =
                assertThrows(IOException.class, () -> CacheFolder.open(dir, FolderAccess.PRIVATE, "the restart cache"));
        assertTrue(
                refused.getMessage()
                        .startsWith(
                                "refusing " + dir + " as the restart cache: it belongs to nobody (uid 65534), not to "),
                refused.getMessage());

        // Its group's on purpose: another member's folder is used, where it is the group's.
        Files.setAttribute(dir, "unix:gid", 0);
        Files.setAttribute(dir, "unix:mode", 02770);
        assertEquals(dir, CacheFolder.open(dir, FolderAccess.sharedWith("root"), "the restart cache"));
        IOException otherGroup = assertThrows(
                IOException.class,
                () -> CacheFolder.open(dir, FolderAccess.sharedWith("nogroup"), "the restart cache"));
        assertTrue(
                otherGroup
                        .getMessage()
                        .contains("shared with group nogroup: it belongs to nobody (uid 65534) and to group root"),
                otherGroup.getMessage());
    }

    @Test
    void aFolderItsGroupCanWriteIsRefusedUnlessShared() throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("group"));
        Files.setAttribute(dir, "unix:mode", 0770);
        IOException refused =
                assertThrows(IOException.class, () -> CacheFolder.open(dir, FolderAccess.PRIVATE, "the shard cache"));
        assertTrue(refused.getMessage().contains("its group root can write it (mode 0770)"), refused.getMessage());
    }

    @Test
    void aSharedFolderIsMadeTheGroupsAndItsFilesTakeTheGroup() throws IOException {
        Path dir = tmp.resolve("shared");
        CacheFolder.open(dir, FolderAccess.sharedWith("nogroup"), "the shard cache");
        assertEquals(02770, (Integer) Files.getAttribute(dir, "unix:mode") & 07777);
        assertEquals(
                "nogroup",
                Files.readAttributes(dir, java.nio.file.attribute.PosixFileAttributes.class)
                        .group()
                        .getName());
        Path file = dir.resolve("f");
        SafeFiles.writeAtomically(file, FolderAccess.sharedWith("nogroup"), new byte[] {1});
        assertEquals("rw-r-----", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals(
                "nogroup",
                Files.readAttributes(file, java.nio.file.attribute.PosixFileAttributes.class)
                        .group()
                        .getName());
        assertThrows(
                IOException.class,
                () -> CacheFolder.open(
                        tmp.resolve("x"), FolderAccess.sharedWith("no-such-group-here"), "the shard cache"));
    }

    @Test
    void aFileWhereTheFolderShouldBeIsNamed() throws IOException {
        Path file = Files.writeString(tmp.resolve("file"), "x");
        IOException refused =
                assertThrows(IOException.class, () -> CacheFolder.open(file, FolderAccess.PRIVATE, "the shard cache"));
        assertEquals("cannot use " + file + " as the shard cache: it is not a folder", refused.getMessage());
    }
}
