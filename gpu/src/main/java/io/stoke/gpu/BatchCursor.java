package io.stoke.gpu;

import io.stoke.loader.sample.OrderFeed;
import io.stoke.loader.sample.Sampler;
import java.util.function.Supplier;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NoOpIdleStrategy;

/**
 * Walks (epoch, batch) through a {@link GpuDecodeStage}'s epochs in the sampler's order, or an order
 * feed's. Never waits: where the feed has not yet given the next epoch's order, {@link #advance}
 * says false with {@link #awaiting} set, and says true once it has (the consumer gives an epoch's
 * order when it starts reading that epoch, so the batches before it must be handed out first).
 *
 * <p>The decode thread's alone: it moves the cursor and reads the batch it is on from the fields,
 * which only {@link #advance} writes.
 */
final class BatchCursor {
    /** The look at the order feed: it never idles there, it only asks. */
    private static final IdleStrategy NO_IDLE = NoOpIdleStrategy.INSTANCE;

    private final Sampler sampler;
    private final Supplier<OrderFeed> feed; // null: the sampler's order
    private final long firstEpoch;
    private final int firstBatch;
    private final long epochs;
    private final int batchSize;

    long epoch;
    int batch;
    int batches;
    int start; // the batch's first position in the epoch's order
    int size;
    boolean last;
    int[] order;
    int[] starts; // the feed's batch boundaries, or null: the sampler's batches of batchSize
    boolean awaiting; // on epoch `epoch`, whose order the feed has not given yet

    /**
     * Before the first batch; {@link #advance} moves onto it.
     *
     * @param feed the order feed, where the epochs' orders are given (it gives null until it is open),
     *     or null for the sampler's
     * @param firstBatch the first epoch's first batch: the batches before it were delivered before
     * @param epochs epochs from the first; 0 for no end
     */
    BatchCursor(
            Sampler sampler, Supplier<OrderFeed> feed, long firstEpoch, int firstBatch, long epochs, int batchSize) {
        this.sampler = sampler;
        this.feed = feed;
        this.firstEpoch = firstEpoch;
        this.firstBatch = firstBatch;
        this.epochs = epochs;
        this.batchSize = batchSize;
        this.epoch = firstEpoch - 1;
    }

    /** Moves to the next batch; false after the last, or while the next epoch's order is awaited. */
    boolean advance() {
        if (!awaiting) {
            batch++;
        }
        while (awaiting || order == null || batch >= batches) {
            if (!awaiting) {
                epoch++;
                if (epochs > 0 && epoch >= firstEpoch + epochs) {
                    return false;
                }
            }
            if (feed != null) {
                // Throws where the feed broke its format or ended first; the consumer is told.
                OrderFeed open = feed.get();
                OrderFeed.GivenEpoch given = open == null ? null : open.await(epoch, () -> false, NO_IDLE);
                awaiting = given == null;
                if (awaiting) {
                    return false;
                }
                order = given.indices();
                starts = given.batchStarts();
                batches = given.batches();
                if (epoch == firstEpoch) {
                    given.checkStartBatch(firstBatch);
                }
            } else {
                order = sampler.order(epoch);
                starts = null;
                batches = sampler.batchesPerEpoch(epoch);
            }
            batch = epoch == firstEpoch ? firstBatch : 0;
        }
        if (starts != null) {
            start = starts[batch];
            size = starts[batch + 1] - start;
        } else {
            start = batch * batchSize;
            size = sampler.batchSize(epoch, batch);
        }
        last = batch == batches - 1;
        return true;
    }
}
