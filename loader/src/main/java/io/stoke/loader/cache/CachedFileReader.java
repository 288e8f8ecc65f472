package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.LibC;
import io.stoke.loader.decode.CopyOnDecode;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
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
 * the original is read this time. While the loader has slack the worker copies a missed JPEG itself
 * as it decodes it ({@link MissCopy}, {@link CopyOnDecode}); otherwise it asks the cache's fillers.
 * Nothing is allocated per sample once the buffers have grown. One per worker thread.
 */
final class CachedFileReader implements SampleReader, CopyOnDecode {
    private final FileReader files;
    private final EntryLookup lookup;
    private final MissCopy missCopy;
    private final OriginalId id = new OriginalId();
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
    private MemorySegment served = MemorySegment.NULL; // the entry's copy, or NULL: the file
    private long servedLength;

    CachedFileReader(RestartCache cache, FileDataset dataset, long maxBytes) {
        this.files = new FileReader(dataset, maxBytes);
        this.lookup = new EntryLookup(cache, maxBytes);
        this.missCopy = new MissCopy(cache, id);
    }

    @Override
    public SampleStatus read(int sample) {
        missCopy.unresolved(); // the last read's miss, if its decode never said
        served = MemorySegment.NULL;
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
        boolean miss = lookup.miss(found);
        if (found == CacheEntry.COPY) {
            served = lookup.content();
            servedLength = lookup.length();
            return SampleStatus.OK;
        }
        SampleStatus status = files.read(sample);
        if (miss) {
            boolean copyable = status == SampleStatus.OK
                    && files.length() == id.size // else changed since its stat: no entry
                    && ImageFormat.sniff(files.bytes(), files.length()) == ImageFormat.JPEG;
            if (!copyable) {
                missCopy.ask(sample);
            } else {
                missCopy.miss(sample);
            }
        }
        return status;
    }

    @Override
    public RestartCopy wantedCopy() {
        return missCopy.wantedCopy();
    }

    @Override
    public void decoded(boolean copied) {
        missCopy.decoded(copied);
    }

    @Override
    public void done() {
        missCopy.unresolved();
    }

    @Override
    public MemorySegment bytes() {
        return served != MemorySegment.NULL ? served : files.bytes();
    }

    @Override
    public long length() {
        return served != MemorySegment.NULL ? servedLength : files.length();
    }

    @Override
    public String message() {
        return files.message();
    }

    @Override
    public void close() {
        files.close();
        lookup.close();
        missCopy.close();
        arena.close();
    }
}
