package io.stoke.loader.cache;

import io.stoke.loader.decode.RestartCopy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A worker's copy of the JPEG it has just missed, made there and then while the loader has slack
 * ({@link RestartCache#copiesNow}): the copy's entropy decoding is then the only one of the
 * original, and the worker decodes its crop from the copy (the same pixels: the region decoder
 * seeks in it), where a filler would read and decode the original a second time. A miss in a busy
 * moment is left to the fillers, which take only the CPU the workers leave.
 *
 * <p>One per worker reader. Its copier and buffers are made at its first copy and grow to the
 * largest file copied; the header's scratch is this object's arena's. Filing an entry allocates
 * its paths (once per original, not per read).
 */
final class MissCopy implements AutoCloseable {
    private final RestartCache cache;
    private Arena arena;
    private RestartCopy copier;
    private MemorySegment header;

    MissCopy(RestartCache cache) {
        this.cache = cache;
    }

    /**
     * Handles a miss of sample {@code sample}, whose original is {@code jpeg[0, length)} (a JPEG):
     * copied and filed here when the cache copies now, asked of the fillers otherwise. True when
     * {@link #bytes()} then holds a copy to decode instead of the original.
     */
    boolean copyOrAsk(OriginalId id, int sample, MemorySegment jpeg, long length) {
        if (!cache.copiesNow()) {
            cache.request(sample);
            return false;
        }
        if (copier == null) {
            arena = Arena.ofConfined();
            header = RestartCache.headerScratch(arena);
            copier = cache.newCopier();
        }
        RestartCopy.Outcome outcome = copier.copy(jpeg, length);
        try {
            cache.file(id, outcome, copier, header);
        } catch (IOException | UncheckedIOException e) {
            cache.failed(e); // the copy is still this read's: only the folder failed
        }
        cache.copiedByWorkers.increment();
        return outcome == RestartCopy.Outcome.COPIED;
    }

    /** Asks the fillers for sample {@code sample}'s entry (an original this worker cannot copy now). */
    void ask(int sample) {
        cache.request(sample);
    }

    /** The last copy, valid for {@link #length()} bytes until the next {@link #copyOrAsk}. */
    MemorySegment bytes() {
        return copier.bytes();
    }

    long length() {
        return copier.length();
    }

    @Override
    public void close() {
        if (copier != null) {
            copier.close();
            arena.close();
        }
    }
}
