package io.stoke.loader.fs;

import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Who may read and write a folder in which Stoke keeps data between runs (the shard cache, the
 * restart cache): the user running Stoke alone, the default, or the members of one group, when the
 * user asks for it ({@code --cache-shared-with GROUP}). What Stoke writes there comes from remote
 * or cached data, so it is never readable by anyone else: {@code 0600} in a folder of {@code 0700},
 * or {@code 0640} in a folder of {@code 0770} that belongs to the group.
 *
 * @param group the group that shares the folder, or null for the user alone
 */
public record FolderAccess(String group) {
    /** The user running Stoke alone. */
    public static final FolderAccess PRIVATE = new FolderAccess(null);

    private static final Set<PosixFilePermission> OWNER_FILE = PosixFilePermissions.fromString("rw-------");
    private static final Set<PosixFilePermission> GROUP_FILE = PosixFilePermissions.fromString("rw-r-----");
    private static final Set<PosixFilePermission> OWNER_FOLDER = PosixFilePermissions.fromString("rwx------");
    private static final Set<PosixFilePermission> GROUP_FOLDER = PosixFilePermissions.fromString("rwxrwx---");

    public FolderAccess {
        if (group != null && (group.isBlank() || group.indexOf('/') >= 0 || group.indexOf(':') >= 0)) {
            throw new IllegalArgumentException("not a group name: '" + group + "'");
        }
    }

    /** Shared with {@code group}'s members, or {@link #PRIVATE} where {@code group} is null. */
    public static FolderAccess sharedWith(String group) {
        return group == null ? PRIVATE : new FolderAccess(group);
    }

    public boolean shared() {
        return group != null;
    }

    /** What a file Stoke creates here may be: read and written by its owner, read by the group. */
    public Set<PosixFilePermission> filePermissions() {
        return shared() ? GROUP_FILE : OWNER_FILE;
    }

    /** {@link #filePermissions()} as an {@code open} mode: {@code 0640} or {@code 0600}. */
    public int fileMode() {
        return shared() ? 0640 : 0600;
    }

    /** What a folder Stoke creates here may be. */
    public Set<PosixFilePermission> folderPermissions() {
        return shared() ? GROUP_FOLDER : OWNER_FOLDER;
    }

    @Override
    public String toString() {
        return shared() ? "shared with group " + group : "private";
    }
}
