package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.stoke.ffm.LibC;
import io.stoke.loader.internal.SafeFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * A filer's writes of a {@link RestartCache}'s entries, through libc on paths kept in native
 * memory: the entry written under a temporary name, {@code O_CREAT|O_EXCL|O_NOFOLLOW} (a link
 * planted at that name is never followed), then renamed into place, so a reader in any process sees
 * a whole entry or none. One per filing thread (a filler, a worker's {@link MissCopy}, a thread of
 * {@link RestartCache#fill}), confined to it; nothing is allocated per entry.
 *
 * <p>Java's file API did the same work for 0.22-0.25 ms of a worker's CPU an entry (paths,
 * channels and permission sets made per entry, an exception inside {@code Files.isRegularFile} for
 * the absent name, {@code Files.move}'s own {@code lstat}s, a delete after every rename); this does
 * it for 0.13-0.17 ms, of which the system calls are about 0.09 between decodes
 * (docs/benchmarks/README.md). A copy's filing is CPU the loader would otherwise fill the cache with.
 *
 * <p>The temporary name is {@link SafeFiles#temporaryFor}'s: {@code .NAME.PID.RANDOM.tmp} beside
 * the entry, so the folder's walk removes those of a process killed while filing.
 */
final class EntryWriter implements AutoCloseable {
    /** {@code .} + {@code xxxxxxxxxxxxxxxx.stc} + {@code .PID.} + 16 hex digits + {@code .tmp} + NUL, past the folder. */
    private static final int TEMPORARY_NAME_MAX = 1 + 20 + 2 + 20 + 16 + SafeFiles.TEMPORARY.length() + 1;

    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment callState = LibC.allocateCallState(arena);
    private final MemorySegment header = RestartCache.headerScratch(arena);
    private final MemorySegment entryPath;
    private final MemorySegment temporaryPath;
    private final MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
    private final int nameAt;
    private final byte[] pid;
    private final int mode;
    private final SplittableRandom random = new SplittableRandom();
    private boolean published;

    EntryWriter(RestartCache cache, int mode) {
        this.entryPath = arena.allocate(EntryLookup.PATH_MAX);
        this.temporaryPath = arena.allocate(EntryLookup.PATH_MAX + TEMPORARY_NAME_MAX);
        this.nameAt = cache.writeDirectory(entryPath);
        cache.writeDirectory(temporaryPath);
        this.pid = ("." + ProcessHandle.current().pid() + ".").getBytes(StandardCharsets.US_ASCII);
        this.mode = mode;
    }

    /** The scratch an entry's header is written into before {@link #write}. */
    MemorySegment header() {
        return header;
    }

    /** Names the entry of {@code key} and a new temporary name beside it. */
    void name(long key) {
        published = false;
        RestartCache.writeName(entryPath, nameAt, key);
        // .xxxxxxxxxxxxxxxx.stc.PID.RANDOM.tmp in the entry's folder xx/
        MemorySegment.copy(entryPath, nameAt, temporaryPath, nameAt, 3);
        int at = nameAt + 3;
        temporaryPath.set(JAVA_BYTE, at++, (byte) '.');
        for (int i = 0; i < 16 + 4; i++) { // the entry's file name, its .stc included
            temporaryPath.set(JAVA_BYTE, at++, entryPath.get(JAVA_BYTE, nameAt + 3 + i));
        }
        MemorySegment.copy(pid, 0, temporaryPath, JAVA_BYTE, at, pid.length);
        at += pid.length;
        long r = random.nextLong();
        for (int i = 0; i < 16; i++) {
            temporaryPath.set(JAVA_BYTE, at++, HEX[(int) (r >>> (60 - 4 * i)) & 15]);
        }
        for (int i = 0; i < SafeFiles.TEMPORARY.length(); i++) {
            temporaryPath.set(JAVA_BYTE, at++, (byte) SafeFiles.TEMPORARY.charAt(i));
        }
        temporaryPath.set(JAVA_BYTE, at, (byte) 0);
    }

    /**
     * Creates the temporary file and writes {@code head}'s first {@code headLength} bytes, then
     * {@code content}'s first {@code contentLength}: 0, or {@link LibC#ENOENT} where the entry's
     * folder is gone (nothing made; the caller makes it and tries again).
     *
     * @throws IOException the file could not be made or written (it is removed)
     */
    int write(MemorySegment head, long headLength, MemorySegment content, long contentLength) throws IOException {
        int flags = LibC.O_WRONLY | LibC.O_CREAT | LibC.O_EXCL | LibC.O_NOFOLLOW | LibC.O_CLOEXEC;
        int fd = LibC.open(callState, temporaryPath, flags, mode);
        if (fd < 0) {
            int errno = LibC.errno(callState);
            if (errno == LibC.ENOENT) {
                return errno;
            }
            throw failure(temporaryPath, "cannot create", errno);
        }
        try {
            writeAll(fd, head, headLength);
            if (contentLength > 0) {
                writeAll(fd, content, contentLength);
            }
        } catch (IOException e) {
            LibC.close(fd);
            discardTemporary();
            throw e;
        }
        if (LibC.close(fd) != 0) {
            int errno = LibC.errno(callState);
            discardTemporary();
            throw failure(temporaryPath, "cannot close", errno);
        }
        return 0;
    }

    private void writeAll(int fd, MemorySegment from, long n) throws IOException {
        long done = 0;
        while (done < n) {
            long wrote = LibC.write(callState, fd, done == 0 ? from : from.asSlice(done), n - done);
            if (wrote < 0 && LibC.errno(callState) == LibC.EINTR) {
                continue;
            }
            if (wrote <= 0) {
                throw failure(temporaryPath, "cannot write", wrote < 0 ? LibC.errno(callState) : LibC.ENOSPC);
            }
            done += wrote;
        }
    }

    /**
     * What is at the entry's name now: 0 for nothing, else its {@code st_mode}'s type ({@link
     * LibC#S_IFREG} for an entry, another process's).
     *
     * @throws IOException the name could not be looked up
     */
    int entryType() throws IOException {
        if (LibC.lstat(callState, entryPath, stat) == 0) {
            return stat.get(JAVA_INT, LibC.ST_MODE) & LibC.S_IFMT;
        }
        int errno = LibC.errno(callState);
        if (errno == LibC.ENOENT) {
            return 0;
        }
        throw failure(entryPath, "cannot look up", errno);
    }

    /**
     * Renames the temporary file to the entry's name: atomic within the folder, and it replaces a
     * link or a FIFO planted there, never what a link points to.
     *
     * @throws IOException the rename failed (the temporary file is left to the caller)
     */
    void publish() throws IOException {
        if (LibC.rename(callState, temporaryPath, entryPath) != 0) {
            throw failure(entryPath, "cannot rename a new entry to", LibC.errno(callState));
        }
        published = true;
    }

    /** Removes the temporary file, if it is there (not filed: full, there already, or failed). */
    void discardTemporary() {
        LibC.unlink(callState, temporaryPath);
    }

    /** {@link #discardTemporary()} unless {@link #publish()} renamed it since the last {@link #name}. */
    void discardUnpublished() {
        if (!published) {
            discardTemporary();
        }
    }

    /** The entry's path, for messages. */
    MemorySegment entryPath() {
        return entryPath;
    }

    private static IOException failure(MemorySegment path, String what, int errno) {
        return new IOException(what + " " + path.getString(0, StandardCharsets.UTF_8) + ": " + LibC.strerror(errno));
    }

    @Override
    public void close() {
        arena.close();
    }
}
