package io.stoke.loader.source;

import io.stoke.ffm.LibC;
import io.stoke.loader.error.SampleStatus;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads whole files into one native buffer with {@code open}/{@code pread}/{@code close}, the
 * path built in native memory from the index's bytes: nothing is allocated per file once the
 * buffer has grown to the largest file seen. One per worker thread.
 */
public final class FileReader implements SampleReader {
    private static final int PATH_MAX = 4096;

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment callState = LibC.allocateCallState(arena);
    // [0, PATH_MAX): the root, then a relative path; [PATH_MAX, 2*PATH_MAX): an absolute path.
    private final MemorySegment path = arena.allocate(2 * PATH_MAX);
    private final MemorySegment absolutePath = path.asSlice(PATH_MAX);
    private final FileDataset dataset;
    private final int rootLength;
    private final long maxBytes;
    private Arena bufferArena = Arena.ofConfined();
    private MemorySegment buffer;
    private long length;
    private int lastErrno;
    /** Why the last read found no file to read ("a folder", "a pipe (FIFO)"), or null. */
    private String notAFile;
    /** Where the last path pointed when it was a link to nothing (a volume not mounted), or null. */
    private String danglingTarget;

    private MemorySegment lastPath;
    private long lastPathOffset;
    private int lastPathLength;

    public FileReader(FileDataset dataset, long maxBytes) {
        this.dataset = dataset;
        this.maxBytes = maxBytes;
        // Absolute, so that the path opened names the file alone, whatever the working directory:
        // the restart cache files an entry under it (a folder's relative paths named the same entry
        // for two folders, and another entry for the same file listed by its absolute path).
        byte[] root = (dataset.root().toAbsolutePath().toString() + "/").getBytes(StandardCharsets.UTF_8);
        if (root.length >= PATH_MAX) {
            throw new IllegalArgumentException("dataset root path too long: " + dataset.root());
        }
        MemorySegment.copy(root, 0, path, ValueLayout.JAVA_BYTE, 0, root.length);
        rootLength = root.length;
        buffer = bufferArena.allocate(256 * 1024, 64);
    }

    /**
     * Reads sample {@code sample}'s file.
     *
     * @return {@link SampleStatus#OK}, {@link SampleStatus#EMPTY_FILE}, {@link SampleStatus#TOO_LARGE}
     *     or {@link SampleStatus#READ_ERROR} (then {@link #lastErrno()} says why)
     */
    @Override
    public SampleStatus read(int sample) {
        length = 0;
        lastErrno = 0;
        notAFile = null;
        danglingTarget = null;
        MemorySegment fullPath = pathOf(sample);
        return fullPath == null ? SampleStatus.READ_ERROR : readPath(fullPath);
    }

    /**
     * Builds sample {@code sample}'s NUL-terminated path in native memory ({@link #pathOffset()}
     * and {@link #pathLength()} say where its own bytes lie); null when it is too long.
     */
    private MemorySegment pathOf(int sample) {
        boolean absolute = dataset.isAbsolute(sample);
        MemorySegment fullPath = absolute ? absolutePath : path;
        long offset = absolute ? 0 : rootLength;
        int pathLength = dataset.pathLength(sample);
        if (offset + pathLength + 1 > PATH_MAX) {
            lastErrno = 36; // ENAMETOOLONG
            return null;
        }
        dataset.copyPath(sample, fullPath, offset);
        fullPath.set(ValueLayout.JAVA_BYTE, offset + pathLength, (byte) 0);
        lastPath = fullPath;
        lastPathOffset = offset;
        lastPathLength = pathLength;
        return fullPath;
    }

    /**
     * {@code stat}s sample {@code sample}'s file into {@code stat} ({@link LibC#STAT_BYTES}) without
     * opening it, so a cache hit opens only its entry: OK, or {@link SampleStatus#READ_ERROR}
     * ({@link #lastErrno()} says why). Its path, as the dataset holds it, is then {@link
     * #pathBytes()}.
     */
    public SampleStatus stat(int sample, MemorySegment stat) {
        lastErrno = 0;
        MemorySegment fullPath = pathOf(sample);
        if (fullPath == null) {
            return SampleStatus.READ_ERROR;
        }
        if (LibC.stat(callState, fullPath, stat) != 0) {
            lastErrno = LibC.errno(callState);
            return SampleStatus.READ_ERROR;
        }
        return SampleStatus.OK;
    }

    /** The native buffer holding the last path built: its sample's own bytes at {@link #pathOffset()}. */
    public MemorySegment pathBytes() {
        return lastPath;
    }

    public long pathOffset() {
        return lastPathOffset;
    }

    public int pathLength() {
        return lastPathLength;
    }

    /**
     * The length of the last path built as it was opened, from offset 0 of {@link #pathBytes()}:
     * absolute (the dataset's root, made absolute, then the sample's relative path; or the
     * sample's own absolute path). What names the file whichever dataset lists it.
     */
    public int openedPathLength() {
        return (int) lastPathOffset + lastPathLength;
    }

    /**
     * Reads the whole file at {@code fullPath} (NUL-terminated, in native memory) into the buffer:
     * OK, {@link SampleStatus#EMPTY_FILE}, {@link SampleStatus#TOO_LARGE} or {@link
     * SampleStatus#READ_ERROR}.
     */
    public SampleStatus readPath(MemorySegment fullPath) {
        length = 0;
        lastErrno = 0;
        notAFile = null;
        danglingTarget = null;
        // O_NONBLOCK: a pipe named like an image opens at once (and is refused below) where it would
        // wait forever for a writer; a regular file's reads ignore it.
        int fd = LibC.open(callState, fullPath, LibC.O_RDONLY | LibC.O_CLOEXEC | LibC.O_NONBLOCK);
        if (fd < 0) {
            lastErrno = LibC.errno(callState);
            if (lastErrno == LibC.ENOENT) {
                danglingTarget = danglingTarget(fullPath);
            }
            return SampleStatus.READ_ERROR;
        }
        try {
            long size = LibC.lseek(callState, fd, 0, LibC.SEEK_END);
            // A folder's end is no size (ext4 puts it at 2^63 - 1, a buffer that size fails the
            // JVM), a pipe has none: neither is "too large" or "empty". Only these rare paths, and
            // a buffer's growth, ask what the file is.
            if (size <= 0 || size > maxBytes || size > buffer.byteSize()) {
                int errno = LibC.errno(callState);
                String kind = notAFile(fd);
                if (kind != null) {
                    notAFile = kind;
                    return SampleStatus.READ_ERROR;
                }
                if (size < 0) {
                    lastErrno = errno;
                    return SampleStatus.READ_ERROR;
                }
                if (size == 0) {
                    return SampleStatus.EMPTY_FILE;
                }
                if (size > maxBytes) {
                    return SampleStatus.TOO_LARGE;
                }
                ensureCapacity(size);
            }
            long done = 0;
            while (done < size) {
                // One pread almost always suffices; only a short read pays for a slice.
                MemorySegment into = done == 0 ? buffer : buffer.asSlice(done);
                long n = LibC.pread(callState, fd, into, size - done, done);
                if (n < 0) {
                    int errno = LibC.errno(callState);
                    if (errno == LibC.EINTR) {
                        continue;
                    }
                    lastErrno = errno;
                    return SampleStatus.READ_ERROR;
                }
                if (n == 0) {
                    break; // shrank while we read it; decode what is there
                }
                done += n;
            }
            length = done;
            return done == 0 ? SampleStatus.EMPTY_FILE : SampleStatus.OK;
        } finally {
            LibC.close(fd);
        }
    }

    /**
     * Where {@code fullPath} points when it is a symbolic link to nothing (the listing saw the link,
     * the open found no file: a link into a volume not mounted, say), else null. Only on a failed
     * open, so its allocations are off the hot path.
     */
    private static String danglingTarget(MemorySegment fullPath) {
        try {
            Path path = Path.of(fullPath.getString(0));
            return Files.isSymbolicLink(path) ? Files.readSymbolicLink(path).toString() : null;
        } catch (IOException | RuntimeException e) {
            return null; // gone since, or not a path Java reads: strerror says the rest
        }
    }

    /** What {@code fd} is when it is not a regular file ("a folder", "a pipe (FIFO)", ...), else null. */
    private String notAFile(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
            if (LibC.fstat(callState, fd, stat) != 0) {
                return null;
            }
            int type = stat.get(ValueLayout.JAVA_INT, LibC.ST_MODE) & LibC.S_IFMT;
            return switch (type) {
                case LibC.S_IFREG -> null;
                case LibC.S_IFDIR -> "a folder";
                case LibC.S_IFIFO -> "a pipe (FIFO)";
                case 0020000 -> "a character device";
                case 0060000 -> "a block device";
                case 0140000 -> "a socket";
                default -> "of file type 0" + Integer.toOctalString(type);
            };
        }
    }

    private void ensureCapacity(long size) {
        if (buffer.byteSize() < size) {
            long grown = Math.max(size, buffer.byteSize() * 2);
            Arena next = Arena.ofConfined();
            MemorySegment bigger = next.allocate(grown, 64);
            bufferArena.close();
            bufferArena = next;
            buffer = bigger;
        }
    }

    /** The bytes read by the last successful {@link #read}. */
    public MemorySegment buffer() {
        return buffer;
    }

    @Override
    public MemorySegment bytes() {
        return buffer;
    }

    @Override
    public String message() {
        if (notAFile != null) {
            return "it is " + notAFile + ", not a file";
        }
        if (danglingTarget != null) {
            return "it is a link to " + danglingTarget + ", which does not exist";
        }
        return lastErrno != 0 ? LibC.strerror(lastErrno) : null;
    }

    @Override
    public long length() {
        return length;
    }

    public int lastErrno() {
        return lastErrno;
    }

    @Override
    public void close() {
        bufferArena.close();
        arena.close();
    }
}
