package io.stoke.loader.work;

import io.stoke.loader.autoworkers.AutoWorkers;
import io.stoke.loader.autoworkers.AutoWorkersLog;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.cache.RestartCacheEpochs;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.internal.Joins;
import io.stoke.loader.sample.OrderFeed;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.ring.SlotRing;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.agrona.concurrent.IdleStrategy;

/**
 * The producer side: worker threads that fill the ring's slots, one sample at a time, and the
 * in-process consumer's end of it. Wires the parts, each of which is tested alone:
 * {@link TicketSchedule} (which sample a ticket is), {@link WorkerLoop} (what a worker does with
 * it), {@link Publisher} (batches published in order, an epoch that decoded nothing stopping the
 * stream), {@link WorkerActivity} (which workers run) and, with auto-workers, {@link AutoWorkers}
 * (how many should, from {@link WorkerCounters} and the consumer's waits).
 *
 * <p>Ownership: a slot belongs to the pipeline from {@link SlotRing#acquire} until
 * {@link SlotRing#publish}, to the consumer until it calls {@link SlotRing#release}.
 */
public final class Pipeline implements AutoCloseable {
    private final SlotRing ring;
    private final TicketSchedule schedule;
    private final RunState state;
    private final Publisher publisher;
    private final RestartCacheEpochs cacheEpochs;
    private final WorkerActivity activity;
    private final WorkerCounters counters;
    private final Thread[] threads;
    private final AutoWorkers autoWorkers;
    // Written by the one consumer thread: how long nextSlot waited, summed (auto-workers' stall).
    private final AtomicLong consumerWaitNanos = new AtomicLong();
    private final AtomicLong consumerTaken = new AtomicLong();
    private volatile boolean consumerInProcess;

    /**
     * How a pipeline runs: its threads, where it starts and stops, and what it does with bad samples.
     *
     * @param workers    the worker threads started
     * @param autoWorkers whether auto-workers choose how many of the {@code workers} take samples (all
     *     do at the start); otherwise all of them always do
     * @param startEpoch the epoch to start in
     * @param startBatch the first batch of epoch {@code startEpoch} to produce (to resume mid-epoch:
     *     batch k of epoch e is the same whatever came before it)
     * @param epochs     epochs to produce, the first one counted even when it starts past batch 0;
     *     0 for no end
     * @param skipErrors whether a sample that fails is recorded in its batch (else the pipeline fails)
     * @param workerNice the workers' nice value, 0 to 19 (0: the process's own; see {@link WorkerPriority})
     * @param cache      where the workers read lossless restart-marker copies of the originals, or null
     * @param orderFeed  where each epoch's order is given (the sampler's order then unused), or null
     */
    public record Settings(
            int workers,
            boolean autoWorkers,
            long startEpoch,
            int startBatch,
            long epochs,
            boolean skipErrors,
            int workerNice,
            RestartCache cache,
            OrderFeed orderFeed) {
        public Settings {
            if (workers < 1) {
                throw new IllegalArgumentException("workers must be positive, not " + workers);
            }
        }
    }

    /** Starts the workers' threads at once, filling {@code ring} with {@code dataset}'s samples in {@code sampler}'s order. */
    public Pipeline(
            Dataset dataset,
            Sampler sampler,
            TransformSpec spec,
            SlotRing ring,
            Settings settings,
            Supplier<IdleStrategy> idleStrategies) {
        if (ring.geometry().samplesPerSlot() != sampler.batchSize()
                || ring.geometry().sampleBytes() != spec.sampleBytes()) {
            throw new IllegalArgumentException("ring geometry does not match batch size and transform");
        }
        this.ring = ring;
        this.schedule = settings.orderFeed() != null
                ? TicketSchedule.fed(
                        settings.orderFeed(),
                        settings.startEpoch(),
                        settings.startBatch(),
                        settings.epochs(),
                        sampler.batchSize())
                : TicketSchedule.of(sampler, settings.startEpoch(), settings.startBatch(), settings.epochs());
        this.state = new RunState(schedule.totalBatches);
        InFlightBatch[] table = InFlightBatch.table(ring.geometry().slotCount());
        this.cacheEpochs = settings.cache() == null ? null : new RestartCacheEpochs(settings.cache());
        this.publisher = new Publisher(ring, table, settings.skipErrors(), schedule, state, cacheEpochs);
        int workers = settings.workers();
        boolean mayYield = settings.autoWorkers() && settings.workerNice() == 0;
        this.activity = new WorkerActivity(workers, mayYield);
        this.counters = new WorkerCounters(activity.threadCount());
        WorkerLoop loop = new WorkerLoop(
                dataset,
                sampler,
                spec,
                ring,
                settings.cache(),
                schedule,
                table,
                publisher,
                activity,
                counters,
                state,
                idleStrategies,
                settings.workerNice(),
                settings.autoWorkers(),
                this::consumerTaken,
                this::consumerWaitNanos);
        threads = new Thread[activity.threadCount()];
        for (int w = 0; w < threads.length; w++) {
            int id = w;
            threads[w] = Thread.ofPlatform()
                    .name(w < workers ? "stoke-worker-" + w : "stoke-worker-" + (w - workers) + "-yielding")
                    .daemon(true)
                    .unstarted(() -> loop.run(id));
        }
        activity.threads(threads);
        autoWorkers = settings.autoWorkers()
                ? new AutoWorkers(new PipelineWorkers(this, activity, counters, threads), workers, mayYield)
                : null;
        for (Thread t : threads) {
            t.start();
        }
        if (autoWorkers != null) {
            autoWorkers.start();
        }
    }

    /** Workers taking samples now. */
    public int activeWorkers() {
        return activity.activeWorkers();
    }

    /** What auto-workers did (changes and windows), or null when the workers are fixed. */
    public AutoWorkersLog autoWorkers() {
        return autoWorkers == null ? null : autoWorkers.log();
    }

    /**
     * How long the consumer waited for batches, summed: the in-process one's, or what consumers add
     * in the ring's header (auto-workers' stall, and the workers' copy gate).
     */
    long consumerWaitNanos() {
        return consumerInProcess ? consumerWaitNanos.get() : ring.ringState().consumerWaitNanos();
    }

    boolean consumerInProcess() {
        return consumerInProcess;
    }

    /** Batches the consumer has taken: the in-process one's, or what consumers count in the ring's header. */
    long consumerTaken() {
        return consumerInProcess ? consumerTaken.get() : ring.ringState().consumed();
    }

    boolean isRunningOrPublishing() {
        return state.running
                && state.failure == null
                && publisher.published() + schedule.firstSequence < schedule.totalBatches;
    }

    /**
     * The next published slot, waiting with {@code idle}; -1 once every batch has been taken.
     *
     * @param taken how many batches the caller has taken so far (from the start batch on)
     * @throws NoSampleDecodedException when a whole epoch decoded nothing (after its batches)
     * @throws IllegalStateException when a worker died (its cause attached) or the pipeline closed
     */
    public int nextSlot(long taken, IdleStrategy idle) {
        consumerInProcess = true;
        long start = System.nanoTime();
        int slot = awaitSlot(taken, idle);
        // One consumer thread writes it; lazySet, as the workers' counters.
        consumerWaitNanos.lazySet(consumerWaitNanos.get() + System.nanoTime() - start);
        if (slot >= 0) {
            consumerTaken.lazySet(consumerTaken.get() + 1);
        }
        return slot;
    }

    private int awaitSlot(long taken, IdleStrategy idle) {
        long next = schedule.firstSequence + taken;
        idle.reset();
        while (true) {
            int slot = ring.pollReady();
            if (slot >= 0) {
                return slot;
            }
            Throwable cause = state.failure;
            if (cause instanceof NoSampleDecodedException e) {
                if (next >= state.deliverable) {
                    throw e;
                }
                // The epoch's last batch is being published under the publisher's lock: wait for it.
                idle.idle();
                continue;
            } else if (cause != null) {
                // Batches published before the failure are delivered first; failure is written
                // after their publish, so this second look sees every one of them.
                slot = ring.pollReady();
                if (slot >= 0) {
                    return slot;
                }
                throw new IllegalStateException("a loader worker failed: " + cause, cause);
            } else if (next >= schedule.totalBatches) {
                return -1;
            }
            if (!state.running) {
                if (state.failure != null) {
                    // Stopped by a failure written after the look above (the publisher writes it
                    // before it stops the workers): deliver what it leaves, then throw it.
                    continue;
                }
                throw new IllegalStateException("loader is closed");
            }
            idle.idle();
        }
    }

    /** Errors recorded for the batch now in {@code slot} (valid between publish and release). */
    public List<SampleError> errors(int slot) {
        return publisher.errors(slot);
    }

    public SlotRing ring() {
        return ring;
    }

    /** Batches this pipeline publishes in all (from the start batch on; {@link Long#MAX_VALUE} for no end). */
    public long totalBatches() {
        long total = schedule.totalBatches;
        return total == Long.MAX_VALUE ? Long.MAX_VALUE : total - schedule.firstSequence;
    }

    /** Why a worker died, or null. */
    public Throwable failure() {
        return state.failure;
    }

    public long publishedBatches() {
        return publisher.published();
    }

    /** What the restart cache did in each epoch published so far, or null without one. */
    public RestartCacheEpochs cacheEpochs() {
        return cacheEpochs;
    }

    /** Worker threads: the fixed count, or the most an auto pipeline runs at once. */
    public int workers() {
        return activity.maxWorkers();
    }

    /** Stops the workers (each finishes at most its current sample) and waits for them. */
    @Override
    public void close() {
        state.running = false;
        activity.wakeAll();
        if (autoWorkers != null) {
            autoWorkers.close();
        }
        for (Thread t : threads) {
            Joins.uninterruptibly(t); // an interrupt is kept for the caller, after every worker has ended
        }
    }

    /** Whether every worker has exited. */
    public boolean stopped() {
        for (Thread t : threads) {
            if (t.isAlive()) {
                return false;
            }
        }
        return true;
    }
}
