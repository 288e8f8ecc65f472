package io.stoke.loader.cache;

import io.stoke.loader.decode.RestartCopy;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * A worker's copy of the JPEG it has just missed, made as the worker decodes it while the loader
 * has slack ({@link RestartCache#copiesNow}): the decode reads the file's coefficients once for its
 * pixels and for the copy ({@link io.stoke.loader.decode.CopyOnDecode}), where a filler would read
 * and decode the original a second time. A miss in a busy moment, and one whose decode did not
 * make the copy (a file the copier keeps as it is, a region not decoded by the region decoder),
 * is left to the fillers, which take only the CPU the workers leave.
 *
 * <p>One per worker reader, whose {@link OriginalId} names the original read last; a miss is
 * pending from {@link #wants} until {@link #decoded} or {@link #unresolved}. Its copier, buffers
 * and {@link EntryWriter} are made at its first copy, in the worker's thread, and the buffers grow
 * to the largest file copied; filing an entry allocates nothing.
 */
final class MissCopy implements AutoCloseable {
    private final RestartCache cache;
    private final OriginalId id;
    private RestartCopy copier;
    private EntryWriter writer;
    private int pending = -1;

    MissCopy(RestartCache cache, OriginalId id) {
        this.cache = cache;
        this.id = id;
    }

    /**
     * Handles a miss of sample {@code sample}, a JPEG: pending, to be copied as it is decoded
     * ({@link #wantedCopy()}, then {@link #decoded}), while the cache copies now; otherwise the
     * fillers are asked.
     */
    void miss(int sample) {
        if (!cache.copiesNow()) {
            cache.request(sample);
            return;
        }
        pending = sample;
    }

    /** The copier for the pending miss, or null when none is pending. */
    RestartCopy wantedCopy() {
        if (pending < 0) {
            return null;
        }
        if (copier == null) {
            writer = cache.newWriter();
            copier = cache.newCopier();
        }
        return copier;
    }

    /**
     * The pending miss was decoded: its copy is filed where the decode made it, the fillers asked
     * where it did not. Nothing pending: nothing to do.
     */
    void decoded(boolean copied) {
        if (pending < 0) {
            return;
        }
        int sample = pending;
        pending = -1;
        if (!copied) {
            cache.request(sample);
            return;
        }
        try {
            if (cache.file(id, RestartCopy.Outcome.COPIED, copier, writer)) {
                cache.copiedByWorkers.increment();
            }
        } catch (IOException | UncheckedIOException e) {
            cache.failed(e); // the decode's pixels are still this read's: only the folder failed
        }
    }

    /** The pending miss, if any, was not decoded as a JPEG region (or not at all): the fillers are asked. */
    void unresolved() {
        if (pending >= 0) {
            cache.request(pending);
            pending = -1;
        }
    }

    /** Asks the fillers for sample {@code sample}'s entry (an original this worker cannot copy now). */
    void ask(int sample) {
        cache.request(sample);
    }

    @Override
    public void close() {
        if (copier != null) {
            copier.close();
            writer.close();
        }
    }
}
