package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.LibC;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.FileReader;
import io.stoke.loader.source.SampleReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A worker's reader of a file dataset through a {@link RestartCache}: each sample's file is
 * {@code stat}ed, its entry looked up by (path, size, modification time) and, when it holds a
 * whole copy that names that original, the copy is read instead of the file. A missing entry is
 * asked of the cache's filler, and a damaged or foreign one is counted and replaced; either way
 * the original is read this time. Nothing is allocated per sample once the buffers have grown.
 * One per worker thread.
 */
final class CachedFileReader implements SampleReader {
    private static final int PATH_MAX = 4096;

    private final RestartCache cache;
    private final FileReader files;
    private final long maxBytes;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment callState = LibC.allocateCallState(arena);
    private final MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
    private final MemorySegment header = arena.allocate(CacheEntry.HEADER_BYTES + PATH_MAX, 8);
    private final MemorySegment entryPath = arena.allocate(PATH_MAX);
    private final int entryNameAt;
    private Arena contentArena = Arena.ofConfined();
    private MemorySegment content = contentArena.allocate(256 * 1024, 64);
    private boolean fromCache;
    private long length;

    CachedFileReader(RestartCache cache, FileDataset dataset, long maxBytes) {
        this.cache = cache;
        this.files = new FileReader(dataset, maxBytes);
        this.maxBytes = maxBytes;
        this.entryNameAt = cache.writeDirectory(entryPath);
    }

    @Override
    public SampleStatus read(int sample) {
        fromCache = false;
        length = 0;
        if (files.stat(sample, stat) != SampleStatus.OK) {
            return files.read(sample); // says why, as without a cache
        }
        long size = stat.get(JAVA_LONG, LibC.ST_SIZE);
        long sec = stat.get(JAVA_LONG, LibC.ST_MTIME_SEC);
        long nsec = stat.get(JAVA_LONG, LibC.ST_MTIME_NSEC);
        MemorySegment path = files.pathBytes();
        long offset = files.pathOffset();
        int pathLength = files.pathLength();
        long key = CacheEntry.key(path, offset, pathLength, size, sec, nsec);
        RestartCache.writeName(entryPath, entryNameAt, key);
        int found = readEntry(path, offset, pathLength, size, sec, nsec);
        if (found == CacheEntry.COPY) {
            fromCache = true;
            cache.hits.increment();
            return SampleStatus.OK;
        }
        if (found == CacheEntry.ORIGINAL) {
            cache.hits.increment();
        } else {
            cache.misses.increment();
            if (found == DAMAGED) {
                cache.discard(entryPath); // never served; the filler makes it again
            }
            cache.request(sample, found == DAMAGED);
        }
        return files.read(sample);
    }

    private static final int MISSING = -1;
    private static final int DAMAGED = -2;

    /** Reads the entry at {@link #entryPath}: its kind (the copy then in {@link #content}), or MISSING or DAMAGED. */
    private int readEntry(MemorySegment path, long offset, int pathLength, long size, long sec, long nsec) {
        int fd = LibC.open(callState, entryPath, LibC.O_RDONLY | LibC.O_CLOEXEC);
        if (fd < 0) {
            return MISSING;
        }
        try {
            long head = CacheEntry.HEADER_BYTES + pathLength;
            if (head > header.byteSize() || LibC.pread(callState, fd, header, head, 0) != head) {
                return DAMAGED;
            }
            if (!CacheEntry.names(header, path, offset, pathLength, size, sec, nsec)) {
                // Another original under the same key (a collision), or a damaged header.
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
            ensure(n);
            long done = 0;
            while (done < n) {
                long got =
                        LibC.pread(callState, fd, done == 0 ? content : content.asSlice(done), n - done, head + done);
                if (got < 0 && LibC.errno(callState) == LibC.EINTR) {
                    continue;
                }
                if (got <= 0) {
                    return DAMAGED; // cut short
                }
                done += got;
            }
            if (CacheEntry.hash(0, content, 0, n) != header.get(JAVA_LONG, CacheEntry.CONTENT_HASH)) {
                return DAMAGED;
            }
            length = n;
            return kind;
        } finally {
            LibC.close(fd);
        }
    }

    private void ensure(long n) {
        if (content.byteSize() < n) {
            Arena next = Arena.ofConfined();
            MemorySegment bigger = next.allocate(Math.max(n, 2 * content.byteSize()), 64);
            contentArena.close();
            contentArena = next;
            content = bigger;
        }
    }

    @Override
    public MemorySegment bytes() {
        return fromCache ? content : files.bytes();
    }

    @Override
    public long length() {
        return fromCache ? length : files.length();
    }

    @Override
    public String message() {
        return files.message();
    }

    @Override
    public void close() {
        files.close();
        contentArena.close();
        arena.close();
    }
}
