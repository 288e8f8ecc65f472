package io.stoke.loader.internal;

import io.stoke.ffm.LibC;
import io.stoke.loader.fs.FolderAccess;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A folder in which Stoke keeps data between runs and processes (the shard cache, the restart
 * cache), made or checked before anything in it is read or written. Another local user must
 * neither read what Stoke keeps there (it came from private buckets) nor plant what Stoke will
 * read as its own, so:
 *
 * <ul>
 *   <li>a folder that is missing is made {@code 0700}, or {@code 02770} and the group's when it is
 *       shared on purpose ({@link FolderAccess}): its files then take the group, as they are made;
 *   <li>a folder that exists (made by an earlier run, by the user, or by someone else first) is used
 *       only when it is the caller's own and neither its group nor others can write it; shared with
 *       a group, it may be another member's, when it is the group's and others cannot write it.
 *       Anything else is refused in one sentence naming the folder, its owner and its mode.
 * </ul>
 *
 * The folder's own path may be a symbolic link (to a scratch disk, say): what it leads to is what
 * is checked. Inside it, nothing is followed ({@link SafeFiles}).
 */
public final class CacheFolder {
    private CacheFolder() {}

    /**
     * The folder {@code dir}, absolute: made where missing (its missing parents as any folder),
     * checked where it exists.
     *
     * @param role what the folder is for, in messages: "the shard cache", "the restart cache"
     * @throws IOException the folder cannot be made, is not a folder, or is refused (the message
     *     says why, and how to share a folder on purpose)
     */
    public static Path open(Path dir, FolderAccess access, String role) throws IOException {
        Path folder = dir.toAbsolutePath().normalize();
        Path parent = folder.getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        try {
            Files.createDirectory(folder, PosixFilePermissions.asFileAttribute(access.folderPermissions()));
            if (access.shared()) {
                // The umask takes the group's bits away; setgid makes every file and folder made in
                // it the group's, so no file needs its group set after it is made.
                Files.getFileAttributeView(folder, PosixFileAttributeView.class).setGroup(group(access, role));
                Files.setAttribute(folder, "unix:mode", 02770);
            }
            return folder;
        } catch (FileAlreadyExistsException exists) {
            // Made before: by an earlier run, another rank a moment ago, or someone else. Checked below.
        }
        check(folder, access, role);
        return folder;
    }

    /**
     * A folder inside a cache folder that {@link #open} gave ({@code xx/} of a cache's entries): made
     * with {@code access}'s permissions where missing; where it exists, it must be a folder itself,
     * not a link to one elsewhere, which a member of a shared folder's group could plant.
     *
     * @throws IOException it cannot be made, or something else has its name (said)
     */
    public static Path subfolder(Path folder, FolderAccess access) throws IOException {
        try {
            Files.createDirectory(folder, PosixFilePermissions.asFileAttribute(access.folderPermissions()));
            if (access.shared()) {
                Files.setAttribute(folder, "unix:mode", 02770); // the umask's bits back; setgid inherited
            }
        } catch (FileAlreadyExistsException exists) {
            PosixFileAttributes attributes =
                    Files.readAttributes(folder, PosixFileAttributes.class, java.nio.file.LinkOption.NOFOLLOW_LINKS);
            if (!attributes.isDirectory()) {
                throw new IOException(
                        folder + " is " + (attributes.isSymbolicLink() ? "a symbolic link" : "not a folder")
                                + ", not the folder Stoke makes there: not followed");
            }
        }
        return folder;
    }

    /** Refuses {@code folder} unless {@code access} lets this user use it as it is. */
    static void check(Path folder, FolderAccess access, String role) throws IOException {
        PosixFileAttributes attributes = Files.readAttributes(folder, PosixFileAttributes.class);
        if (!attributes.isDirectory()) {
            throw new IOException("cannot use " + folder + " as " + role + ": it is not a folder");
        }
        int mode = (Integer) Files.getAttribute(folder, "unix:mode") & 07777;
        int owner = (Integer) Files.getAttribute(folder, "unix:uid");
        int me = LibC.geteuid();
        String owned = "it belongs to " + attributes.owner().getName() + " (uid " + owner + ")";
        String optIn = "; use a folder of your own, or share one with a group on purpose (--cache-shared-with"
                + " GROUP, docs/security.md)";
        if ((mode & 0002) != 0) {
            throw new IOException("refusing " + folder + " as " + role + ": any user can write it (mode " + octal(mode)
                    + "), so another user could plant what Stoke reads" + optIn);
        }
        if (!access.shared()) {
            if (owner != me) {
                throw new IOException("refusing " + folder + " as " + role + ": " + owned + ", not to "
                        + System.getProperty("user.name") + " (uid " + me + ") who runs Stoke, so that user"
                        + " could read or plant what Stoke keeps there" + optIn);
            }
            if ((mode & 0020) != 0) {
                throw new IOException("refusing " + folder + " as " + role + ": its group "
                        + attributes.group().getName() + " can write it (mode " + octal(mode)
                        + "), so another user could plant what Stoke reads" + optIn);
            }
            return;
        }
        String group = attributes.group().getName();
        if (!group.equals(access.group()) && (owner != me || (mode & 0020) != 0)) {
            throw new IOException("refusing " + folder + " as " + role + " shared with group " + access.group()
                    + ": " + owned + " and to group " + group + " (mode " + octal(mode) + "); make it the"
                    + " group's (chgrp " + access.group() + " " + folder + " && chmod 2770 " + folder + ")");
        }
    }

    private static GroupPrincipal group(FolderAccess access, String role) throws IOException {
        try {
            return java.nio.file.FileSystems.getDefault()
                    .getUserPrincipalLookupService()
                    .lookupPrincipalByGroupName(access.group());
        } catch (java.nio.file.attribute.UserPrincipalNotFoundException e) {
            throw new IOException("cannot share " + role + " with group " + access.group() + ": no such group", e);
        }
    }

    private static String octal(int mode) {
        return String.format("%04o", mode);
    }
}
