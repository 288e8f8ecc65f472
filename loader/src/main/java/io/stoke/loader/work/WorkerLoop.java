package io.stoke.loader.work;

import io.stoke.loader.autoworkers.AutoWorkers;
import io.stoke.loader.autoworkers.AutoWorkersRule;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.decode.SampleTransform;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.ring.SlotBody;
import io.stoke.ring.SlotRing;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.agrona.concurrent.IdleStrategy;

/**
 * What every worker thread runs: draw a ticket, decode its sample into its batch's slot, and hand
 * finished batches to the {@link Publisher}.
 *
 * <p>Work is handed out per sample from one counter of tickets ({@link TicketSchedule}), in epoch
 * order, so every worker helps with the oldest unfinished batch: the first batch is ready after
 * about {@code batchSize / workers} decodes, not {@code batchSize}. The worker that draws a batch's
 * first ticket takes a free slot for it, in batch order (a later batch never takes the last slot
 * from an earlier one, which could deadlock a consumer that holds a batch). Taking a slot blocks
 * while none is free: a slow consumer stalls the workers, and memory never grows.
 */
final class WorkerLoop {
    private final Dataset dataset;
    private final RestartCache cache;
    private final Sampler sampler;
    private final TransformSpec spec;
    private final SlotRing ring;
    private final TicketSchedule schedule;
    private final InFlightBatch[] table;
    private final SlotBody[] slotBodies;
    private final EpochOrders orders;
    private final Publisher publisher;
    private final WorkerActivity activity;
    private final WorkerCounters counters;
    private final RunState state;
    private final Supplier<IdleStrategy> idleStrategies;
    private final int workerNice;
    private final boolean countThreads;
    private final BooleanSupplier isRunning;
    private final WorkerSlack slack;
    private static final BooleanSupplier NO_WAIT = () -> false;
    private final AtomicLong nextTicket = new AtomicLong();
    private volatile long nextToAcquire;

    /**
     * @param workerNice   the first set's nice value (0: the process's own; the yielding set's is
     *     {@link AutoWorkersRule#YIELD_NICE})
     * @param countThreads whether each worker records its thread id (for auto-workers' CPU times)
     * @param consumerTaken the batches the consumer has taken, and {@code consumerWaited} how long it
     *     waited for them (for when the workers copy their misses: {@link WorkerSlack#forWorkers})
     */
    WorkerLoop(
            Dataset dataset,
            Sampler sampler,
            TransformSpec spec,
            SlotRing ring,
            RestartCache cache,
            TicketSchedule schedule,
            InFlightBatch[] table,
            Publisher publisher,
            WorkerActivity activity,
            WorkerCounters counters,
            RunState state,
            Supplier<IdleStrategy> idleStrategies,
            int workerNice,
            boolean countThreads,
            LongSupplier consumerTaken,
            LongSupplier consumerWaited) {
        this.dataset = dataset;
        this.sampler = sampler;
        this.spec = spec;
        this.ring = ring;
        this.cache = cache;
        this.schedule = schedule;
        this.table = table;
        this.publisher = publisher;
        this.activity = activity;
        this.counters = counters;
        this.state = state;
        this.idleStrategies = idleStrategies;
        this.workerNice = workerNice;
        this.countThreads = countThreads;
        this.slack = new WorkerSlack(state);
        schedule.slack = slack;
        if (cache != null) {
            // The cache's fillers copy on what the workers leave: one per worker, for when all idle.
            cache.pace(slack, slack.forWorkers(ring, consumerTaken, consumerWaited), activity.maxWorkers());
        }
        this.isRunning = () -> state.running;
        this.orders = new EpochOrders(sampler);
        int slots = ring.geometry().slotCount();
        this.slotBodies = new SlotBody[slots];
        for (int s = 0; s < slots; s++) {
            slotBodies[s] = new SlotBody(ring.geometry()).wrap(ring.slot(s));
        }
        nextTicket.set(schedule.firstTicket());
        nextToAcquire = schedule.firstSequence;
    }

    /** Worker {@code id}'s thread body. */
    void run(int id) {
        try {
            work(id);
        } finally {
            slack.workerFinished();
        }
    }

    private void work(int id) {
        WorkerPriority.lower(activity.inYieldingSet(id) ? AutoWorkersRule.YIELD_NICE : workerNice);
        if (countThreads) {
            counters.set(id, WorkerCounters.TID, AutoWorkers.threadId());
        }
        IdleStrategy idle = idleStrategies.get();
        WorkerActivity activity = this.activity;
        RunState state = this.state;
        TicketSchedule schedule = this.schedule;
        if (!activity.awaitActive(id, state)) {
            return;
        }
        // Inside the try: a reader that cannot be made (a cache serving another dataset, a shard
        // index that fails) fails the run with its reason, where a worker thread dying of it left
        // the consumer waiting for batches no worker would make.
        try {
            SampleReader reader = RestartCache.readerThrough(cache, dataset, spec.maxFileBytes());
            try (SampleTransform transform = new SampleTransform(dataset, spec, sampler.seed(), reader)) {
                TicketSchedule.Ticket at = new TicketSchedule.Ticket();
                int[] order = null;
                long orderEpoch = -1;
                while (state.running) {
                    if (!activity.isActive(id) && !activity.awaitActive(id, state)) {
                        break;
                    }
                    long ticket = nextTicket.getAndIncrement();
                    if (ticket >= schedule.totalTickets) {
                        break;
                    }
                    if (!schedule.locate(ticket, at, isRunning, idle)) {
                        break; // stopped while waiting for an epoch's order from the feed
                    }
                    InFlightBatch batch = table[(int) (at.sequence % table.length)];
                    if (at.positionInBatch == 0) {
                        if (!begin(id, batch, at, idle)) {
                            break;
                        }
                    } else if (!awaitBegun(batch, at.sequence, idle)) {
                        break;
                    }
                    if (at.order != null) {
                        order = at.order; // the order fed for this epoch
                    } else if (at.epoch != orderEpoch) {
                        order = orders.get(at.epoch);
                        orderEpoch = at.epoch;
                    }
                    fill(id, transform, batch, at.positionInBatch, order[at.position]);
                }
            }
        } catch (Throwable t) {
            state.fail(t);
            ring.ringState().failProducer();
        }
    }

    /** Waits for this batch's turn, takes a slot, and opens the batch's entry. */
    private boolean begin(int id, InFlightBatch batch, TicketSchedule.Ticket at, IdleStrategy idle) {
        idle.reset();
        while (nextToAcquire != at.sequence) {
            if (!state.running) {
                return false;
            }
            idle.idle();
        }
        long waitStart = System.nanoTime();
        int slot = ring.acquire(idle, NO_WAIT);
        if (slot < 0) {
            // None free: the consumer is the bottleneck, and this core is the fillers' until one is.
            slack.waitStarts();
            try {
                slot = ring.acquire(idle, isRunning);
            } finally {
                slack.waitEnds();
            }
        }
        counters.add(id, WorkerCounters.SLOT_WAIT_NANOS, System.nanoTime() - waitStart);
        if (slot < 0) {
            return false;
        }
        int k = at.batchIndex;
        if (at.order != null) {
            batch.begin(slot, at.epoch, k, at.batchLength, at.lastBatch);
        } else {
            batch.begin(slot, at.epoch, k, sampler.batchSize(at.epoch, k), k == sampler.batchesPerEpoch(at.epoch) - 1);
        }
        batch.sequence = at.sequence;
        nextToAcquire = at.sequence + 1;
        return true;
    }

    private boolean awaitBegun(InFlightBatch batch, long sequence, IdleStrategy idle) {
        idle.reset();
        while (batch.sequence != sequence) {
            if (!state.running) {
                return false;
            }
            idle.idle();
        }
        return true;
    }

    private void fill(int id, SampleTransform transform, InFlightBatch batch, int position, int sample) {
        SlotBody body = slotBodies[batch.slot];
        long start = System.nanoTime();
        SampleStatus status = transform.apply(sample, batch.epoch, body.pixels(), body.pixelOffset(position));
        long elapsed = System.nanoTime() - start;
        body.putLabel(position, dataset.label(sample))
                .putIndex(position, sample)
                .putStatus(position, status.code());
        if (status != SampleStatus.OK) {
            body.sample(position).fill((byte) 0);
            batch.addError(new SampleError(position, sample, dataset.name(sample), status, transform.message()));
        }
        counters.add(id, WorkerCounters.SAMPLES, 1);
        batch.decodeNanos.addAndGet(elapsed);
        batch.sourceBytes.addAndGet(transform.lastSourceBytes());
        if (batch.remaining.decrementAndGet() == 0) {
            publisher.publishFinished();
        }
    }
}
