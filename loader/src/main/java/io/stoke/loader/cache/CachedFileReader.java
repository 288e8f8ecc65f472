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
 * {@code stat}ed, its entry looked up by (absolute path, size, modification time) and, when it holds a
 * whole copy that names that original, the copy is read instead of the file. A missing entry is
 * asked of the cache's filler, and a damaged or foreign one is counted and replaced; either way
 * the original is read this time. Nothing is allocated per sample once the buffers have grown.
 * One per worker thread.
 */
final class CachedFileReader implements SampleReader {
    private final FileReader files;
    private final EntryLookup lookup;
    private final OriginalId id = new OriginalId();
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
    private boolean fromCache;

    CachedFileReader(RestartCache cache, FileDataset dataset, long maxBytes) {
        this.files = new FileReader(dataset, maxBytes);
        this.lookup = new EntryLookup(cache, maxBytes);
    }

    @Override
    public SampleStatus read(int sample) {
        fromCache = false;
        if (files.stat(sample, stat) != SampleStatus.OK) {
            return files.read(sample); // says why, as without a cache
        }
        id.set(
                files.pathBytes(),
                0,
                files.openedPathLength(),
                stat.get(JAVA_LONG, LibC.ST_SIZE),
                stat.get(JAVA_LONG, LibC.ST_MTIME_SEC),
                stat.get(JAVA_LONG, LibC.ST_MTIME_NSEC));
        int found = lookup.read(id);
        lookup.account(found, sample);
        if (found == CacheEntry.COPY) {
            fromCache = true;
            return SampleStatus.OK;
        }
        return files.read(sample);
    }

    @Override
    public MemorySegment bytes() {
        return fromCache ? lookup.content() : files.bytes();
    }

    @Override
    public long length() {
        return fromCache ? lookup.length() : files.length();
    }

    @Override
    public String message() {
        return files.message();
    }

    @Override
    public void close() {
        files.close();
        lookup.close();
        arena.close();
    }
}
