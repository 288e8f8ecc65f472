package io.stoke.loader.work;

import io.stoke.loader.cache.RestartCacheEpochs;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Publishes filled batches in order. Workers finish batches in any order; the worker that finishes
 * one calls {@link #publishFinished}, which publishes every batch that is finished and whose
 * predecessors are published, so batches reach the consumer in sequence. It writes each slot's
 * header, keeps the batch's errors for the in-process consumer, counts the epoch's decodes
 * ({@link EpochDecodeCount}) and ends the stream after the last batch.
 *
 * <p>Ownership: a slot belongs to the workers from {@link SlotRing#acquire} until this publishes
 * it, to the consumer until it calls {@link SlotRing#release}.
 */
final class Publisher {
    private final SlotRing ring;
    private final InFlightBatch[] table;
    private final MemorySegment[] slotMemory;
    private final long sampleBytes;
    private final boolean skipErrors;
    private final long firstSequence;
    private final long totalBatches;
    private final RunState state;
    private final RestartCacheEpochs cacheEpochs;
    private final ReentrantLock lock = new ReentrantLock();
    private final AtomicReferenceArray<List<SampleError>> slotErrors;
    // Under lock only:
    private final SlotHeader header = new SlotHeader();
    private final EpochDecodeCount epochDecodes = new EpochDecodeCount();
    private long nextToPublish;
    private volatile long published;

    /**
     * @param table      the batches in flight, batch {@code g} at {@code g % table.length}
     * @param skipErrors whether failed samples are recorded (else a batch with one is marked failed)
     * @param schedule   the sequence numbers to publish
     * @param cacheEpochs told each epoch's end as its last batch is published, or null (no restart cache)
     */
    Publisher(
            SlotRing ring,
            InFlightBatch[] table,
            boolean skipErrors,
            TicketSchedule schedule,
            RunState state,
            RestartCacheEpochs cacheEpochs) {
        this.ring = ring;
        this.table = table;
        this.sampleBytes = ring.geometry().sampleBytes();
        this.skipErrors = skipErrors;
        this.firstSequence = schedule.firstSequence;
        this.totalBatches = schedule.totalBatches;
        this.state = state;
        this.cacheEpochs = cacheEpochs;
        this.nextToPublish = firstSequence;
        int slots = ring.geometry().slotCount();
        this.slotMemory = new MemorySegment[slots];
        for (int s = 0; s < slots; s++) {
            slotMemory[s] = ring.slot(s);
        }
        this.slotErrors = new AtomicReferenceArray<>(slots);
    }

    /** Publishes, in order, every batch that is finished and whose predecessors are published. */
    void publishFinished() {
        lock.lock();
        try {
            while (nextToPublish < totalBatches && state.failure == null) {
                long sequence = nextToPublish;
                InFlightBatch batch = table[(int) (sequence % table.length)];
                if (batch.sequence != sequence || batch.remaining.get() != 0) {
                    break;
                }
                List<SampleError> errors = batch.errors();
                // Before the publish: the consumer gets this batch (and its errors), then the
                // exception, never a normal end first.
                NoSampleDecodedException none = epochDecodes.count(batch.epoch, batch.size, errors, batch.lastInEpoch);
                if (none != null) {
                    state.failAfter(sequence, none);
                }
                // Plain writes: the publish below is the release that hands them to the consumer.
                header.wrap(slotMemory[batch.slot])
                        .sequence(sequence)
                        .epoch(batch.epoch)
                        .batchIndex(batch.batchIndex)
                        .sampleCount(batch.size)
                        .skippedCount(errors.size())
                        .pixelBytes(batch.size * sampleBytes)
                        .decodeNanos(batch.decodeNanos.get())
                        .sourceBytes(batch.sourceBytes.get())
                        .flags(SlotHeader.flags(!errors.isEmpty() && !skipErrors, batch.lastInEpoch));
                slotErrors.set(batch.slot, errors);
                if (cacheEpochs != null && batch.lastInEpoch) {
                    // Before the publish, every read of the epoch done: a consumer that holds the
                    // epoch's last batch finds its counts (after the publish, it could ask first).
                    cacheEpochs.ended(batch.epoch);
                }
                ring.publish(batch.slot);
                nextToPublish = sequence + 1;
                published = sequence + 1 - firstSequence;
                // For consumers in other processes and status lines (consumer lag).
                ring.ringState().published(published);
                if (none != null) {
                    // A release after the publish: a consumer that sees the failure finds this batch.
                    ring.ringState().failProducer();
                }
            }
            if (nextToPublish == totalBatches && state.failure == null) {
                // A release after the last publish: a consumer that sees it and polls once more
                // finds every batch (RingState's class comment).
                ring.ringState().endStream();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Errors recorded for the batch now in {@code slot} (valid between publish and release). */
    List<SampleError> errors(int slot) {
        return slotErrors.get(slot);
    }

    /** Batches published, from the start batch on. */
    long published() {
        return published;
    }
}
