package io.stoke.remote;

import io.stoke.ffm.LibC;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.internal.CacheFolder;
import io.stoke.loader.internal.SafeFiles;
import io.stoke.loader.internal.Urls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The shard cache's folder ({@code --shard-cache-dir}), shared by every rank and job on the node
 * that names it: a shard is fetched once, by whichever process needs it first, and mapped by all.
 *
 * <ul>
 *   <li>A shard's file is named by what it is: the SHA-256 of its URL without the query string (a
 *       presigned query changes from job to job and names the same object) and of its version (its
 *       ETag, or its size and Last-Modified time). Two objects never share a file; a shard rewritten
 *       in the store gets a new one.
 *   <li>It is fetched into an exclusive temporary file ({@link SafeFiles}) and renamed into place
 *       whole, under an exclusive {@code flock} on the shard's lock file ({@code NAME.lock}): of the
 *       processes that need it, one fetches and the others wait on the lock, then map what it wrote.
 *       Nothing is ever truncated or written in place, so no mapping sees its file change.
 *   <li>Every process holds a shared {@code flock} on each shard file it maps, for as long as it maps
 *       it. A file is removed (at eviction or close) only by a process that then gets the exclusive
 *       lock without waiting: never while another process maps it, which would keep its pages but
 *       lose the file that the next reader would have found.
 *   <li>A file found in place is opened without following a link, checked to be a regular file of
 *       the shard's size, and checked to be the file still at the name once its lock is held (an
 *       evictor may have removed it meanwhile).
 * </ul>
 *
 * A process killed mid-fetch leaves a temporary file; the next process to open the folder removes
 * it ({@link #sweep}).
 *
 * <p>A shard whose store names no version at all (an HTTP server with neither ETag nor Last-Modified)
 * cannot be told from another object at the same URL: it gets a file of this process's own, which
 * no other process reads, and the cache says so once.
 *
 * <p>{@code flock}, not {@link FileChannel#lock}: Java's locks are POSIX record locks, which the
 * process holds as a whole, so two maps of one shard in one JVM would collide and any close of the
 * file would drop them. A flock belongs to its open file, as a lock between processes must.
 */
final class ShardFolder {
    /** What a shard's file name ends with; its lock file adds {@link #LOCK}. */
    static final String SHARD = ".shard";

    static final String LOCK = ".lock";

    /** How long a release waits for another process's hold on a shard's lock (a release's: microseconds). */
    private static final long RELEASE_LOCK_WAIT_NANOS = 200_000_000L;
    /** What the file of a shard without a version ends with: one process's own. */
    static final String PRIVATE = ".private";
    /** A fetch's temporary file ({@link SafeFiles#temporaryFor}): {@code .NAME.PID.RANDOM.tmp}. */
    private static final Pattern FETCHING =
            Pattern.compile("\\.([0-9a-f]{64}-[0-9a-f]{16}\\" + SHARD + ")\\.\\d+\\.[0-9a-f]+\\" + SafeFiles.TEMPORARY);
    /** A file of a shard without a version: {@code HASH.PID.RANDOM.private}. */
    private static final Pattern OWN = Pattern.compile("[0-9a-f]{64}\\.\\d+\\.[0-9a-f]+\\" + PRIVATE);

    private static final int ENOENT = 2;
    private static final int READ_FLAGS = LibC.O_RDONLY | LibC.O_CLOEXEC | LibC.O_NOFOLLOW | LibC.O_NONBLOCK;

    private final Path folder;
    private final FolderAccess access;
    private final AtomicBoolean saidPrivate = new AtomicBoolean();

    /**
     * Makes or checks {@code dir} ({@link CacheFolder}): 0700, or the group's with {@code access}
     * shared; then removes what processes that ended mid-fetch left ({@link #sweep}).
     */
    ShardFolder(Path dir, FolderAccess access) throws IOException {
        this.folder = CacheFolder.open(dir, access, "the shard cache");
        this.access = access;
        int removed = sweep();
        if (removed > 0) {
            System.err.println("stoke: removed " + removed + " unfinished file(s) from the shard cache " + folder
                    + ", left by processes that ended while they fetched");
        }
    }

    /**
     * Removes the temporary files of fetches that no process makes any more, and the files of
     * unversioned shards whose process is gone (both left by a process killed mid-run): a fetch's
     * temporary file lives only while its process holds the shard's lock, and a private file only
     * while its process holds a lock on it, so either one whose lock can be taken at once is a
     * leftover. Whole shard files stay: the next run that needs one maps it.
     */
    int sweep() throws IOException {
        List<Path> leftovers;
        try (Stream<Path> files = Files.list(folder)) {
            leftovers = files.filter(
                            f -> FETCHING.matcher(f.getFileName().toString()).matches()
                                    || OWN.matcher(f.getFileName().toString()).matches())
                    .toList();
        }
        int removed = 0;
        try (Arena scratch = Arena.ofConfined()) {
            Native n = new Native(scratch);
            for (Path f : leftovers) {
                Matcher fetching = FETCHING.matcher(f.getFileName().toString());
                Path lock = fetching.matches() ? folder.resolve(fetching.group(1) + LOCK) : f;
                int fd;
                try {
                    fd = n.openRegular(lock);
                } catch (IOException notOurs) {
                    continue; // a link or a FIFO at the lock's name: refused, named, where the shard is read
                }
                try {
                    // No lock file: nobody fetches the shard (a fetch makes it before its temporary file). A
                    // private file is locked a moment after it is made: one younger than a minute is let be.
                    boolean left = fd < 0
                            ? lock != f
                            : (lock != f || modifiedBefore(n, Instant.now().minusSeconds(60)))
                                    && n.tryFlock(fd, LibC.LOCK_EX);
                    if (left && Files.deleteIfExists(f)) {
                        removed++;
                    }
                } finally {
                    if (fd >= 0) {
                        LibC.close(fd);
                    }
                }
            }
        }
        return removed;
    }

    Path path() {
        return folder;
    }

    /** Fetches an object into {@code dst}, whose size is the object's. */
    @FunctionalInterface
    interface Fetch {
        void into(MemorySegment dst);
    }

    /**
     * A shard file this process maps: its bytes (owned by the caller's arena), and the descriptor
     * that holds its shared lock until {@link #release}. {@code fetched}: this process fetched it,
     * rather than finding it in place.
     */
    static final class Mapped {
        final Path file;
        final MemorySegment bytes;
        final boolean fetched;
        private final int fd;
        private final boolean own; // a file of this process's own (no version), which nobody else opens

        Mapped(Path file, MemorySegment bytes, boolean fetched, int fd, boolean own) {
            this.file = file;
            this.bytes = bytes;
            this.fetched = fetched;
            this.fd = fd;
            this.own = own;
        }
    }

    /**
     * The file name of the object at {@code url} whose version is {@code version}: 64 hex digits of
     * the URL's hash (query and fragment left out), 16 of the version's, then {@link #SHARD}.
     */
    static String name(String url, String version) {
        return sha256(Urls.withoutQuery(url)) + "-" + sha256(version).substring(0, 16) + SHARD;
    }

    /**
     * The shard at {@code url} of {@code size} bytes, mapped from the folder into {@code arena}: the
     * file another process (or an earlier run) fetched, or fetched here by {@code fetch} while the
     * others wait. May block on another process's fetch of the same shard; holds no Java lock.
     *
     * @param version the object's version (ETag, or size and time), or null where the store gives none
     */
    Mapped map(String url, long size, String version, Arena arena, Fetch fetch) throws IOException {
        String redacted = Urls.redact(url); // messages never carry a presigned query's signature
        if (version == null) {
            return mapPrivate(url, redacted, size, arena, fetch);
        }
        String name = name(url, version);
        Path file = folder.resolve(name);
        Path lock = folder.resolve(name + LOCK);
        try (Arena scratch = Arena.ofConfined()) {
            Native n = new Native(scratch);
            while (true) {
                Mapped there = mapIfThere(n, file, redacted, size, arena);
                if (there != null) {
                    return there;
                }
                int lockFd = openLock(n, lock);
                if (lockFd < 0) {
                    continue; // removed by an evictor as it was made: so was the shard, and this looks again
                }
                try {
                    n.flock(lockFd, LibC.LOCK_EX, lock);
                    if (!n.isAt(lockFd, lock)) {
                        continue; // an evictor removed the lock file while this process waited: take the new one
                    }
                    there = mapIfThere(n, file, redacted, size, arena); // fetched by the process this one waited for
                    if (there != null) {
                        return there;
                    }
                    return fetchInPlace(n, file, size, arena, fetch);
                } finally {
                    LibC.close(lockFd); // drops the lock
                }
            }
        }
    }

    /** Maps {@code file} where it is, under a shared lock; null where it is missing or was just removed. */
    private Mapped mapIfThere(Native n, Path file, String redacted, long size, Arena arena) throws IOException {
        int fd = n.openRegular(file);
        if (fd < 0) {
            return null;
        }
        boolean kept = false;
        try {
            n.flock(fd, LibC.LOCK_SH, file);
            if (!n.isAt(fd, file)) {
                return null; // removed (and maybe fetched again) between the open and the lock
            }
            long found = n.stat.get(ValueLayout.JAVA_LONG, LibC.ST_SIZE);
            if (found != size) {
                throw new IOException(file + " in the shard cache is " + found + " bytes where " + redacted + " is "
                        + size + ": it is not a copy Stoke made of that shard; remove it");
            }
            MemorySegment bytes = map(fd, FileChannel.MapMode.READ_ONLY, size, arena);
            kept = true;
            return new Mapped(file, bytes, false, fd, false);
        } finally {
            if (!kept) {
                LibC.close(fd);
            }
        }
    }

    /**
     * Fetches the shard into an exclusive temporary file, flushed and then renamed to {@code file}:
     * under the shard's lock, so no other process fetches it meanwhile, and the rename makes it whole
     * at its name at once. The shared lock is taken on the temporary file, so it is held on the shard
     * file from the moment it has its name.
     */
    private Mapped fetchInPlace(Native n, Path file, long size, Arena arena, Fetch fetch) throws IOException {
        Path tmp = SafeFiles.temporaryFor(file);
        int fd = -1;
        try {
            MemorySegment bytes;
            try (FileChannel ch = SafeFiles.createNew(tmp, access)) {
                bytes = size == 0
                        ? MemorySegment.NULL.reinterpret(0)
                        : ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena); // grows the file to the shard's size
            }
            fd = n.openRegular(tmp);
            if (fd < 0) {
                throw new IOException("cannot open " + tmp + ", which Stoke just made: " + LibC.strerror(n.errno()));
            }
            n.flock(fd, LibC.LOCK_SH, tmp);
            fetch.into(bytes);
            if (size > 0) {
                bytes.force(); // on the disk before its name says it is whole: a crash must not leave a hole under it
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            Mapped m = new Mapped(file, bytes, true, fd, false);
            fd = -1;
            return m;
        } catch (IOException | RuntimeException | Error failed) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException suppressed) {
                failed.addSuppressed(suppressed);
            }
            throw failed;
        } finally {
            if (fd >= 0) {
                LibC.close(fd);
            }
        }
    }

    /** A file only this process uses, for a shard that names no version; removed at {@link #release}. */
    private Mapped mapPrivate(String url, String redacted, long size, Arena arena, Fetch fetch) throws IOException {
        if (saidPrivate.compareAndSet(false, true)) {
            System.err.println("stoke: WARNING: " + redacted + ": the server names no version of it (no ETag, no"
                    + " Last-Modified), so nothing can tell it from another object at that URL: its copy in the"
                    + " shard cache " + folder + " is this process's own, and every process that reads it fetches"
                    + " it (said once)");
        }
        Path file = folder.resolve(
                sha256(Urls.withoutQuery(url)) + "." + ProcessHandle.current().pid() + "."
                        + Long.toHexString(ThreadLocalRandom.current().nextLong()) + PRIVATE);
        int fd = -1;
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment bytes;
            try (FileChannel ch = SafeFiles.createNew(file, access)) {
                bytes = size == 0
                        ? MemorySegment.NULL.reinterpret(0)
                        : ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            }
            // Held while this process uses the file, so that a sweep of a later process tells it from a leftover.
            Native n = new Native(scratch);
            fd = n.openRegular(file);
            if (fd < 0) {
                throw new IOException("cannot open " + file + ", which Stoke just made: " + LibC.strerror(n.errno()));
            }
            n.flock(fd, LibC.LOCK_SH, file);
            fetch.into(bytes);
            Mapped m = new Mapped(file, bytes, true, fd, true);
            fd = -1;
            return m;
        } catch (IOException | RuntimeException | Error failed) {
            if (fd >= 0) {
                LibC.close(fd);
            }
            try {
                Files.deleteIfExists(file);
            } catch (IOException suppressed) {
                failed.addSuppressed(suppressed);
            }
            throw failed;
        }
    }

    /**
     * Ends this process's use of {@code m}, whose bytes are unmapped already: removes the file (and
     * its lock file) when no other process maps it, waiting at most 200 ms (for another release of the
     * same shard, which holds the shard's lock for microseconds). Another process that maps it,
     * or is about to, keeps it; the last of them removes it.
     */
    void release(Mapped m) {
        if (m.own) {
            try {
                Files.deleteIfExists(m.file);
            } catch (IOException ignored) {
                // left behind; nobody else reads it, and the next process's sweep removes it
            } finally {
                LibC.close(m.fd);
            }
            return;
        }
        boolean mapped = true; // this process's shared lock on the file, held until m.fd closes
        try (Arena scratch = Arena.ofConfined()) {
            Native n = new Native(scratch);
            Path lock = m.file.resolveSibling(m.file.getFileName() + LOCK);
            // The shard's lock first: no process fetches it (and renames a new file to its name) meanwhile.
            int lockFd = n.openRegular(lock);
            if (lockFd < 0) {
                return;
            }
            try {
                // Another process releasing the same shard holds the lock for microseconds: waiting a
                // little for it keeps both from giving up, each on seeing the other, and leaving the
                // file behind (two ranks at exit, test_shared_node on Debian 13). A fetch holds it
                // longer; then the fetcher maps the file, and removes it in its own release.
                if (n.tryFlockWithin(lockFd, LibC.LOCK_EX, RELEASE_LOCK_WAIT_NANOS)
                        && n.isAt(lockFd, lock)
                        && n.tryFlock(m.fd, LibC.LOCK_EX)
                        && n.isAt(m.fd, m.file)) {
                    // No other process maps it; one that opened it and waits for its shared lock finds it gone.
                    Files.deleteIfExists(m.file);
                    Files.deleteIfExists(lock);
                }
            } finally {
                // The file's lock goes before the shard's: a process waiting for the shard's lock to
                // release the file must find this one's shared lock gone, or neither removes it.
                LibC.close(m.fd);
                mapped = false;
                LibC.close(lockFd);
            }
        } catch (IOException ignored) {
            // Left in place (a link or a FIFO planted at the lock's name, say): the next run that needs the
            // shard maps the file, and the planted name is refused there, named.
        } finally {
            if (mapped) {
                LibC.close(m.fd); // drops this process's lock
            }
        }
    }

    /** Whether the file whose {@code fstat} {@link Native#stat} holds was last written before {@code when}. */
    private static boolean modifiedBefore(Native n, Instant when) {
        return n.stat.get(ValueLayout.JAVA_LONG, LibC.ST_MTIME_SEC) < when.getEpochSecond();
    }

    /**
     * Opens (and where missing makes, 0600) a shard's lock file, not following a link, never blocking;
     * -1 where an evictor removed it between the two.
     */
    private int openLock(Native n, Path lock) throws IOException {
        try {
            SafeFiles.createNew(lock, access).close();
        } catch (FileAlreadyExistsException made) {
            // Another process's, or this one's earlier: the same lock.
        }
        return n.openRegular(lock);
    }

    private static MemorySegment map(int fd, FileChannel.MapMode mode, long size, Arena arena) throws IOException {
        if (size == 0) {
            return MemorySegment.NULL.reinterpret(0);
        }
        // The descriptor's own file, opened and checked: /proc's link to it is how Java maps it.
        try (FileChannel ch = FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ)) {
            return ch.map(mode, 0, size, arena);
        }
    }

    private static String sha256(String s) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /** One thread's calls into libc: the errno segment, a {@code struct stat}, and the checks on them. */
    private static final class Native {
        final Arena arena;
        final MemorySegment callState;
        final MemorySegment stat;

        Native(Arena arena) {
            this.arena = arena;
            this.callState = LibC.allocateCallState(arena);
            this.stat = arena.allocate(LibC.STAT_BYTES, 8);
        }

        int errno() {
            return LibC.errno(callState);
        }

        /**
         * A descriptor of {@code file} where it is a regular file ({@link #stat} then holds it), or -1
         * where it is missing; a link or another kind of file is refused, naming it.
         */
        int openRegular(Path file) throws IOException {
            int fd = SafeFiles.openRegular(callState, arena.allocateFrom(file.toString()), stat);
            if (fd == SafeFiles.NOT_REGULAR) {
                throw new IOException(file + " in the shard cache is "
                        + SafeFiles.kind(stat.get(ValueLayout.JAVA_INT, LibC.ST_MODE))
                        + ", not a regular file: Stoke reads only files it made there");
            }
            if (fd < 0) {
                int errno = errno();
                if (errno == ENOENT) {
                    return -1;
                }
                if (errno == LibC.ELOOP) {
                    throw new IOException(file + " in the shard cache is a symbolic link, which Stoke does not follow");
                }
                throw new IOException("cannot open " + file + " in the shard cache: " + LibC.strerror(errno));
            }
            return fd;
        }

        /** Waits for the lock ({@link LibC#LOCK_SH} or {@link LibC#LOCK_EX}) on {@code fd}. */
        void flock(int fd, int operation, Path file) throws IOException {
            while (LibC.flock(callState, fd, operation) != 0) {
                if (errno() != LibC.EINTR) {
                    throw new IOException("cannot lock " + file + ": " + LibC.strerror(errno()));
                }
            }
        }

        /** {@link #tryFlock}, tried again every 2 ms for up to {@code nanos}. */
        boolean tryFlockWithin(int fd, int operation, long nanos) {
            long deadline = System.nanoTime() + nanos;
            while (!tryFlock(fd, operation)) {
                if (System.nanoTime() - deadline >= 0) {
                    return false;
                }
                LockSupport.parkNanos(2_000_000L);
            }
            return true;
        }

        boolean tryFlock(int fd, int operation) {
            while (LibC.flock(callState, fd, operation | LibC.LOCK_NB) != 0) {
                if (errno() != LibC.EINTR) {
                    return false;
                }
            }
            return true;
        }

        /** Whether {@code fd} is still the file at {@code file} (the same device and inode); {@link #stat} then holds it. */
        boolean isAt(int fd, Path file) throws IOException {
            if (LibC.fstat(callState, fd, stat) != 0) {
                throw new IOException("cannot stat " + file + ": " + LibC.strerror(errno()));
            }
            Object ino;
            Object dev;
            try {
                ino = Files.getAttribute(file, "unix:ino", LinkOption.NOFOLLOW_LINKS);
                dev = Files.getAttribute(file, "unix:dev", LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException gone) {
                return false;
            }
            return ((Long) ino) == stat.get(ValueLayout.JAVA_LONG, LibC.ST_INO)
                    && ((Long) dev) == stat.get(ValueLayout.JAVA_LONG, LibC.ST_DEV);
        }
    }
}
