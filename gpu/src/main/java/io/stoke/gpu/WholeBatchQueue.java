package io.stoke.gpu;

import io.stoke.loader.decode.SampleTransform;
import io.stoke.loader.source.SampleReader;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The CPU's whole batches of a {@link GpuDecodeStage}, oldest first: the reader threads' background
 * work. A thread with no task takes the oldest batch's next image ({@link EncodedBatch#stepWhole}),
 * so the batches end in the order they were given, and the reads and decodes the device waits for
 * go ahead of them, one image late at most.
 *
 * <p>The decode thread adds; the reader threads take. Adding publishes the batch's start
 * ({@link EncodedBatch#startWhole}) to them.
 */
final class WholeBatchQueue implements ReaderThreads.Background {
    private final ConcurrentLinkedQueue<EncodedBatch> batches = new ConcurrentLinkedQueue<>();
    private volatile boolean stopped;

    /** Queues {@code batch}, started with {@link EncodedBatch#startWhole}, behind those given before. */
    void add(EncodedBatch batch) {
        batches.add(batch);
    }

    @Override
    public boolean step(SampleReader reader, SampleTransform transform) {
        if (stopped) {
            return false;
        }
        for (EncodedBatch b; (b = batches.peek()) != null; ) {
            if (b.stepWhole(transform)) {
                return true;
            }
            retire(b);
        }
        return false;
    }

    /**
     * Drops {@code b} from the head once every image of it is claimed: the next batch's turn. Checked
     * again under the lock, as the decode thread may have started the same batch object again (its
     * entry's next use) since this thread saw it claimed.
     */
    private synchronized void retire(EncodedBatch b) {
        if (batches.peek() == b && b.wholeClaimed()) {
            batches.poll();
        }
    }

    /** No more steps: the stage is closing, and what is queued is dropped. */
    void stop() {
        stopped = true;
        batches.clear();
    }
}
