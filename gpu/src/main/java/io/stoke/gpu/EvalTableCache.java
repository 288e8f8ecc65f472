package io.stoke.gpu;

import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.resample.Resampler;
import java.util.ArrayDeque;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The evaluation transform's resize tables by decoded image size, for the GPU decode's thread.
 * Under that transform an image's tables ({@link Resampler#evalTables}) follow from its width and
 * height alone, and photographs come in few sizes (2,000 ImageNet-like ones in 471), so each size's
 * are drawn once, not once per image: drawing them was most of the decode thread's "resize host"
 * time (docs/benchmarks/results-gpu-decode). The training transform's depend on each sample's box
 * and are not kept.
 *
 * <p>Bounded: it holds at most {@code maxInts} ints of tables. A new size past that empties it
 * first, and the emptied tables are filled again for later sizes, so a warm cache allocates
 * nothing. The tables it returns stay as they are until the next {@link #get}: the caller copies
 * them out before asking again ({@link DeviceResize#add} writes them to its staging at once).
 *
 * <p>Owner: one thread (the decode thread), as its {@link Resampler}.
 */
final class EvalTableCache {
    private final Resampler resampler;
    private final long maxInts;
    private final Long2ObjectHashMap<ResampleTables> bySize = new Long2ObjectHashMap<>();
    private final ArrayDeque<ResampleTables> spare = new ArrayDeque<>();
    private long heldInts;
    private long drawn;
    private long emptied;

    /** Tables drawn by {@code resampler} (its spec's evaluation transform), at most {@code maxInts} ints held. */
    EvalTableCache(Resampler resampler, long maxInts) {
        if (maxInts < 1) {
            throw new IllegalArgumentException("the cache must hold some tables, not " + maxInts + " ints");
        }
        this.resampler = resampler;
        this.maxInts = maxInts;
    }

    /** The evaluation transform's tables for an image decoded whole at {@code width x height}. */
    ResampleTables get(int width, int height) {
        long key = ((long) width << 32) | (height & 0xFFFF_FFFFL);
        ResampleTables held = bySize.get(key);
        if (held != null) {
            return held;
        }
        ResampleTables t = spare.isEmpty() ? new ResampleTables() : spare.pop();
        resampler.evalTables(width, height, t);
        drawn++;
        if (heldInts + t.ints() > maxInts && !bySize.isEmpty()) {
            bySize.forEach((size, tables) -> spare.push(tables));
            bySize.clear();
            heldInts = 0;
            emptied++;
        }
        bySize.put(key, t);
        heldInts += t.ints();
        return t;
    }

    /** Sizes whose tables were drawn so far: once each, and again after the cache was emptied. */
    long drawn() {
        return drawn;
    }

    /** Times a new size found the cache full and emptied it. */
    long emptied() {
        return emptied;
    }

    /** Sizes held now. */
    int sizes() {
        return bySize.size();
    }

    /** Ints of tables held now. */
    long heldInts() {
        return heldInts;
    }
}
