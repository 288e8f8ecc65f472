package io.stoke.loader.cache;

import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What a loader's restart cache did in each epoch, read from {@link RestartCache#stats()} as the
 * epoch's last batch is published: the user sees when the cache starts to pay. The counts between
 * two epochs' ends are the later epoch's; workers that run ahead into the next epoch (as many
 * batches as the ring has slots) count their reads in the epoch being published, so an epoch's
 * line may hold a few of the next one's reads, never lose one.
 */
public final class RestartCacheEpochs {
    /**
     * One epoch: this epoch's counts, and the cache's totals in this process at its end.
     *
     * @param epoch       the epoch whose last batch was published
     * @param hits        reads served an entry
     * @param misses      reads that found none (the original read, copied by its worker as it
     *                    decodes while the loader has slack, else asked of the fillers)
     * @param copied      entries filed holding a copy
     * @param copiedByWorkers of those, the copies workers made as they decoded a miss (the rest are
     *                    the fillers', made from the CPU the workers left)
     * @param originals   entries filed that say to read the original (it seeks already, or cannot be copied)
     * @param damaged     entries found damaged, read from the original and made again
     * @param filledBytes the bytes of the entries filed
     * @param total       the cache's totals in this process, and its folder's bytes
     */
    public record Epoch(
            long epoch,
            long hits,
            long misses,
            long copied,
            long copiedByWorkers,
            long originals,
            long damaged,
            long filledBytes,
            RestartCache.Stats total) {
        /** The counts between {@code before} and {@code after}. */
        static Epoch between(long epoch, RestartCache.Stats before, RestartCache.Stats after) {
            return new Epoch(
                    epoch,
                    after.hits() - before.hits(),
                    after.misses() - before.misses(),
                    after.copied() - before.copied(),
                    after.copiedByWorkers() - before.copiedByWorkers(),
                    after.originals() - before.originals(),
                    after.damaged() - before.damaged(),
                    after.filledBytes() - before.filledBytes(),
                    after);
        }

        /**
         * The epoch in one line, e.g. {@code restart cache after epoch 3: 1,588 hits, 412 misses, 412
         * copied (44.1 MiB; 301 by the workers as they decoded) this epoch; ...}, ending {@code (full)}
         * once the budget is reached, or with why the folder is written no more ({@code ...; it writes
         * nothing more (/data/cache/.stoke-cache-usage: Read-only file system)}). After an epoch that
         * filed fewer than a tenth of its misses, it says where the copies come from: a loader-bound
         * job (no idle time) makes few, which the user would otherwise learn only from the docs.
         */
        public String sentence() {
            return String.format(
                    Locale.ROOT,
                    "restart cache after epoch %d: %,d hits, %,d misses, %,d copied (%s; %,d by the workers as they"
                            + " decoded)%s%s this epoch; %,d hits, %,d misses, %,d copied this run; the folder holds"
                            + " %s of %s%s",
                    epoch,
                    hits,
                    misses,
                    copied,
                    size(filledBytes),
                    copiedByWorkers,
                    originals > 0 ? String.format(Locale.ROOT, ", %,d read as they are", originals) : "",
                    damaged > 0 ? String.format(Locale.ROOT, ", %,d damaged", damaged) : "",
                    total.hits(),
                    total.misses(),
                    total.copied(),
                    size(total.usedBytes()),
                    size(total.budgetBytes()),
                    total.full()
                            ? " (full)"
                            : total.failure() != null
                                    ? "; it writes nothing more (" + total.failure() + ")"
                                    : fewCopied() ? FEW_COPIED : "");
        }

        /** Said after an epoch that filed few of its misses, where copies can be made. */
        static final String FEW_COPIED = "; few copied this epoch: copies are made from the loader's idle time"
                + " only, so a loader-bound job makes few (stoke cache DATA --restart-cache-dir DIR makes them all"
                + " at once, on every core)";

        private boolean fewCopied() {
            return misses > 0 && (copied + originals) * 10 < misses && RestartCache.whyNoCopies() == null;
        }

        /** Binary units, as the budget is given ({@code 64G} is 64 GiB). */
        private static String size(long bytes) {
            if (bytes >= 1L << 30) {
                return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
            }
            return bytes >= 1L << 20
                    ? String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20))
                    : String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
        }
    }

    private final RestartCache cache;
    // Appended once an epoch, read every 20 ms by a server's loop: a copy per append, none per read.
    private final List<Epoch> epochs = new CopyOnWriteArrayList<>();
    private RestartCache.Stats last;

    /** Counts from now on: a cache shared by loaders one after another counts each one's epochs alone. */
    public RestartCacheEpochs(RestartCache cache) {
        this.cache = cache;
        this.last = cache.stats();
    }

    /** Epoch {@code epoch}'s last batch is published (by the publisher, under its lock). */
    public synchronized void ended(long epoch) {
        RestartCache.Stats now = cache.stats();
        epochs.add(Epoch.between(epoch, last, now));
        last = now;
    }

    /** The epochs ended so far, oldest first (a view, to which later epochs are added). */
    public List<Epoch> epochs() {
        return Collections.unmodifiableList(epochs);
    }

    /** The cache's totals in this process now. */
    public RestartCache.Stats stats() {
        return cache.stats();
    }
}
