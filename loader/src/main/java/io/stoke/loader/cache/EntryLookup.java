package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.LibC;
import io.stoke.loader.decode.ScratchImage;
import io.stoke.loader.internal.SafeFiles;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A worker's reads of a {@link RestartCache}'s entries: the entry of an {@link OriginalId}, opened
 * by its path and read with {@code pread} into buffers this lookup owns and grows, and checked
 * (its header names the original, its content's hash is right) before it is served. Nothing is
 * allocated per sample once the buffers have grown. One per worker thread, inside its reader.
 *
 * <p>An entry is opened through {@code O_NOFOLLOW|O_NONBLOCK} and checked to be a regular file on
 * the descriptor ({@link SafeFiles#openRegular(MemorySegment, MemorySegment, MemorySegment)}): a
 * link or a FIFO at its name, which Stoke never makes, is a miss, said once, never followed nor
 * waited on.
 */
final class EntryLookup implements AutoCloseable {
    static final int MISSING = -1;
    static final int DAMAGED = -2;
    /** A name too long for an entry's: never cached, read as it is, asked of nobody. */
    static final int UNNAMED = -3;
    /** Something Stoke never makes at an entry's name: a link, a FIFO, a folder. */
    static final int PLANTED = -4;
    /** An earlier Stoke's entry ({@link CacheEntry#FORMER_MAGIC}): a miss, made again in this format. */
    static final int FORMER = -5;

    static final int PATH_MAX = 4096;

    private static final int S_IFLNK = 0120000;

    private final RestartCache cache;
    private final long maxBytes;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment callState = LibC.allocateCallState(arena);
    private final MemorySegment header = arena.allocate(CacheEntry.HEADER_BYTES + PATH_MAX, 8);
    private final MemorySegment entryPath = arena.allocate(PATH_MAX);
    private final MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
    private final int entryNameAt;
    private final ScratchImage content = new ScratchImage(256 * 1024);
    private long length;
    private int plantedMode; // st_mode of what the last read found PLANTED

    EntryLookup(RestartCache cache, long maxBytes) {
        this.cache = cache;
        this.maxBytes = maxBytes;
        this.entryNameAt = cache.writeDirectory(entryPath);
    }

    /**
     * Reads the entry of {@code id}: its kind ({@link CacheEntry#COPY}, the copy then in {@link
     * #content()}, or {@link CacheEntry#ORIGINAL}), or {@link #MISSING} or {@link #DAMAGED} (another
     * original under the same key, a header or content that does not check, an entry cut short), or
     * {@link #PLANTED}, or {@link #FORMER}.
     */
    int read(OriginalId id) {
        length = 0;
        if (id.nameLength > PATH_MAX) {
            return UNNAMED;
        }
        RestartCache.writeName(entryPath, entryNameAt, id.key());
        int fd = SafeFiles.openRegular(callState, entryPath, stat);
        if (fd == SafeFiles.NOT_REGULAR) {
            plantedMode = stat.get(JAVA_INT, LibC.ST_MODE);
            return PLANTED;
        }
        if (fd < 0 && LibC.errno(callState) == LibC.ELOOP) {
            plantedMode = S_IFLNK;
            return PLANTED;
        }
        if (fd < 0) {
            return MISSING;
        }
        try {
            long head = CacheEntry.HEADER_BYTES + id.nameLength;
            long headerRead = LibC.pread(callState, fd, header, head, 0);
            if (headerRead >= 8 && header.get(JAVA_LONG, 0) == CacheEntry.FORMER_MAGIC) {
                return FORMER;
            }
            if (headerRead != head || !id.namedBy(header)) {
                return DAMAGED;
            }
            int kind = CacheEntry.kind(header);
            long n = CacheEntry.contentLength(header);
            if (kind == CacheEntry.ORIGINAL) {
                return n == 0 ? kind : DAMAGED;
            }
            if (n < 4 || n > maxBytes) {
                return DAMAGED;
            }
            MemorySegment into = content.ensure(n);
            long done = 0;
            while (done < n) {
                long got = LibC.pread(callState, fd, done == 0 ? into : into.asSlice(done), n - done, head + done);
                if (got < 0 && LibC.errno(callState) == LibC.EINTR) {
                    continue;
                }
                if (got <= 0) {
                    return DAMAGED; // cut short
                }
                done += got;
            }
            if (CacheEntry.contentHash(0, into, 0, n) != header.get(JAVA_LONG, CacheEntry.CONTENT_HASH)) {
                return DAMAGED;
            }
            length = n;
            return kind;
        } finally {
            LibC.close(fd);
        }
    }

    /**
     * Counts what {@link #read} found; true for a miss, which wants an entry made (a damaged one is
     * removed first: it is never served, and made again): the worker copies it ({@link MissCopy}) or
     * asks the filler.
     */
    boolean miss(int found) {
        if (found == UNNAMED) {
            return false;
        }
        if (found == CacheEntry.COPY || found == CacheEntry.ORIGINAL) {
            cache.hits.increment();
            return false;
        }
        cache.misses.increment();
        if (found == PLANTED) {
            cache.planted(entryPath, SafeFiles.kind(plantedMode));
        }
        if (found == FORMER) {
            cache.discard(entryPath); // its content hash is of the former kind: made again, not damaged
        }
        if (found == DAMAGED) {
            cache.countDamaged();
            cache.discard(entryPath);
        }
        return true;
    }

    /** The copy the last {@link #read} found; valid for {@link #length()} bytes until the next read. */
    MemorySegment content() {
        return content.segment();
    }

    long length() {
        return length;
    }

    @Override
    public void close() {
        content.close();
        arena.close();
    }
}
