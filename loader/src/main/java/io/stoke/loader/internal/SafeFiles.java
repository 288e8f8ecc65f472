package io.stoke.loader.internal;

import io.stoke.ffm.LibC;
import io.stoke.loader.fs.FolderAccess;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Files in a folder that other processes, or other users, may share: a cache folder, an output
 * folder, {@code /tmp}. Anyone who can write the folder can plant a symbolic link or a FIFO where
 * Stoke is about to write or read. So nothing here follows a link at the file's own name, nothing
 * blocks on a FIFO, and what is written appears whole or not at all:
 *
 * <ul>
 *   <li>a new file is made with {@code O_CREAT|O_EXCL|O_NOFOLLOW} ({@link #createNew}): a name that
 *       exists, link or not, fails, and nothing is truncated;
 *   <li>a file that replaces another is written to an exclusive temporary file beside it and renamed
 *       over it ({@link #writeAtomically}): a rename replaces a link, never what it points to;
 *   <li>a file is read through {@code O_NOFOLLOW|O_NONBLOCK} and checked, on the open descriptor, to be
 *       a regular file ({@link #openRegular}).
 * </ul>
 */
public final class SafeFiles {
    /** What a temporary file's name ends with, so that a folder's walk can pass over (or remove) it. */
    public static final String TEMPORARY = ".tmp";

    private SafeFiles() {}

    /** Writes a file's contents; given the channel of the temporary file. */
    @FunctionalInterface
    public interface Writer {
        void write(FileChannel channel) throws IOException;
    }

    /**
     * Makes {@code file}, which must not exist (not even as a link), read and written through the
     * channel returned, with {@code access}'s permissions.
     *
     * @throws java.nio.file.FileAlreadyExistsException something, a link included, has the name
     */
    public static FileChannel createNew(Path file, FolderAccess access) throws IOException {
        return FileChannel.open(file, NEW, PosixFilePermissions.asFileAttribute(access.filePermissions()));
    }

    /**
     * {@link #createNew(Path, FolderAccess)} of an output the user shares as any file they write (a
     * dataset's index, a pack's shards, embeddings): the mode the umask gives.
     */
    public static FileChannel createNew(Path file) throws IOException {
        return FileChannel.open(file, NEW);
    }

    private static final Set<OpenOption> NEW = Set.of(
            StandardOpenOption.CREATE_NEW,
            StandardOpenOption.READ,
            StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS);

    /**
     * A name beside {@code target} for a temporary file of this process, which no other process or
     * earlier run of this one uses: {@code .NAME.PID.RANDOM.tmp}.
     */
    public static Path temporaryFor(Path target) {
        return target.resolveSibling(
                "." + target.getFileName() + "." + ProcessHandle.current().pid() + "."
                        + Long.toHexString(ThreadLocalRandom.current().nextLong()) + TEMPORARY);
    }

    /**
     * The process that made {@code file}, where its name is one {@link #temporaryFor} gives; -1
     * otherwise. A folder's walk removes the temporary files of processes that are gone.
     */
    public static long temporaryOwner(Path file) {
        String name = file.getFileName().toString();
        if (!name.startsWith(".") || !name.endsWith(TEMPORARY)) {
            return -1;
        }
        int random = name.lastIndexOf('.', name.length() - TEMPORARY.length() - 1);
        int pid = random < 1 ? -1 : name.lastIndexOf('.', random - 1);
        if (pid < 1) {
            return -1;
        }
        try {
            return Long.parseLong(name, pid + 1, random, 10);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Writes {@code target} whole: {@code writer} fills an exclusive temporary file beside it, which is
     * then flushed to the disk and renamed over {@code target}. A reader sees the old file or the new
     * one; a link at {@code target} is replaced, its target untouched. The temporary file is removed
     * when anything fails. {@code access} null: an output, with the mode the umask gives.
     */
    public static void writeAtomically(Path target, FolderAccess access, Writer writer) throws IOException {
        Path tmp = temporaryFor(target);
        try {
            try (FileChannel channel = access == null ? createNew(tmp) : createNew(tmp, access)) {
                writer.write(channel);
                channel.force(true);
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException | Error failed) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException suppressed) {
                failed.addSuppressed(suppressed);
            }
            throw failed;
        }
    }

    /** {@link #writeAtomically(Path, FolderAccess, Writer)} of an output, with the mode the umask gives. */
    public static void writeAtomically(Path target, Writer writer) throws IOException {
        writeAtomically(target, null, writer);
    }

    /**
     * {@link #writeAtomically(Path, FolderAccess, Writer)} through a stream, which {@code writer}
     * need not close; {@code access} null for an output with the mode the umask gives.
     */
    public static void writeStreamAtomically(Path target, FolderAccess access, StreamWriter writer) throws IOException {
        writeAtomically(target, access, channel -> {
            java.io.OutputStream out =
                    new java.io.BufferedOutputStream(java.nio.channels.Channels.newOutputStream(channel));
            writer.write(new java.io.FilterOutputStream(out) {
                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    out.write(b, off, len);
                }

                @Override
                public void close() throws IOException {
                    out.flush(); // the channel stays open: it is flushed to the disk, then renamed
                }
            });
            out.flush();
        });
    }

    /** Writes a file's contents to a stream. */
    @FunctionalInterface
    public interface StreamWriter {
        void write(java.io.OutputStream out) throws IOException;
    }

    /** {@link #writeAtomically} of {@code bytes}. */
    public static void writeAtomically(Path target, FolderAccess access, byte[] bytes) throws IOException {
        writeAtomically(target, access, channel -> {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                channel.write(b);
            }
        });
    }

    /**
     * Opens {@code file} to read, where it is a regular file: a link at its name is not followed, a
     * FIFO or a device is not waited on.
     *
     * @throws IOException naming the file and why: missing, a link, or not a regular file
     */
    public static FileChannel openRegular(Path file) throws IOException {
        return openRegular(file, false);
    }

    /**
     * {@link #openRegular(Path)}, to read and write in place: for a small file many processes open
     * and change under a lock (a folder's usage count), made before with {@link #createNew}.
     */
    public static FileChannel openRegularToChange(Path file) throws IOException {
        return openRegular(file, true);
    }

    private static FileChannel openRegular(Path file, boolean write) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment callState = LibC.allocateCallState(arena);
            MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
            int fd = openRegular(callState, arena.allocateFrom(file.toString()), stat);
            if (fd == NOT_REGULAR) {
                throw new IOException(file + " is " + kind(stat.get(ValueLayout.JAVA_INT, LibC.ST_MODE))
                        + ", not a regular file: Stoke reads only regular files here");
            }
            if (fd < 0) {
                int errno = LibC.errno(callState);
                if (errno == LibC.ELOOP) {
                    throw new IOException(file + " is a symbolic link, which Stoke does not follow here");
                }
                if (errno == 2) {
                    throw new java.nio.file.NoSuchFileException(file.toString());
                }
                throw new IOException("cannot open " + file + ": " + LibC.strerror(errno));
            }
            try {
                // The descriptor's own file, whatever the name holds by now: /proc's link to it is
                // how Java opens a channel on a file already opened and checked.
                // Opened again through it, the file's permissions are checked again: writing needs no
                // more than the user may do anyway.
                Path opened = Path.of("/proc/self/fd/" + fd);
                return write
                        ? FileChannel.open(opened, StandardOpenOption.READ, StandardOpenOption.WRITE)
                        : FileChannel.open(opened, StandardOpenOption.READ);
            } catch (java.nio.file.FileSystemException e) {
                // Named by the user's path, not /proc's (a read-only mount refuses the write here).
                throw new IOException(
                        "cannot open " + file + (write ? " to write" : "") + ": "
                                + (e.getReason() != null
                                        ? e.getReason()
                                        : e instanceof java.nio.file.AccessDeniedException
                                                ? "Permission denied" // the JDK gives EACCES no reason
                                                : e.getClass().getSimpleName()),
                        e);
            } finally {
                LibC.close(fd);
            }
        }
    }

    /** What {@link #openRegular(MemorySegment, MemorySegment, MemorySegment)} returns for a file that is not regular. */
    public static final int NOT_REGULAR = -2;

    /**
     * The hot path's {@link #openRegular(Path)}: no allocation, the path NUL-terminated in native memory.
     * Returns a descriptor (to close) of a regular file, whose {@code struct stat} is then in {@code
     * stat}; {@link #NOT_REGULAR} (nothing to close; {@code stat} says what it is); or -1 with {@code
     * errno} in {@code callState} ({@link LibC#ELOOP} for a link).
     */
    public static int openRegular(MemorySegment callState, MemorySegment path, MemorySegment stat) {
        int fd = LibC.open(callState, path, LibC.O_RDONLY | LibC.O_CLOEXEC | LibC.O_NOFOLLOW | LibC.O_NONBLOCK);
        if (fd < 0) {
            return -1;
        }
        if (LibC.fstat(callState, fd, stat) != 0) {
            LibC.close(fd);
            return -1;
        }
        if ((stat.get(ValueLayout.JAVA_INT, LibC.ST_MODE) & LibC.S_IFMT) != LibC.S_IFREG) {
            LibC.close(fd);
            return NOT_REGULAR;
        }
        return fd;
    }

    /** The kind of a file that is not regular, from its {@code st_mode}, for messages. */
    public static String kind(int mode) {
        return switch (mode & LibC.S_IFMT) {
            case 0010000 -> "a FIFO";
            case 0020000 -> "a character device";
            case 0040000 -> "a folder";
            case 0060000 -> "a block device";
            case 0120000 -> "a symbolic link";
            case 0140000 -> "a socket";
            default -> "not a regular file (mode " + Integer.toOctalString(mode) + ")";
        };
    }
}
