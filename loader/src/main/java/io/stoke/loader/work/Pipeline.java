package io.stoke.loader.work;

import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.transform.SampleTransform;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.loader.tune.TunerLog;
import io.stoke.loader.tune.WorkerTuner;
import io.stoke.ring.SlotBody;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.agrona.concurrent.IdleStrategy;

/**
 * The producer side: worker threads that fill the ring's slots, one sample at a time.
 *
 * <p>Work is handed out per sample from one counter of tickets, in epoch order, so every worker
 * helps with the oldest unfinished batch: the first batch is ready after about
 * {@code batchSize / workers} decodes, not {@code batchSize}. The worker that draws a batch's first
 * ticket takes a free slot for it, in batch order (a later batch never takes the last slot from
 * an earlier one, which could deadlock a consumer that holds a batch). The worker that finishes a
 * batch's last sample publishes every finished batch in order, so batches reach the consumer in
 * order. Taking a slot blocks while none is free: a slow consumer stalls the workers, and memory
 * never grows.
 *
 * <p>Auto mode ({@code tune}): all threads start, but only the active ones draw tickets; the
 * others are parked between two samples, holding no ticket, so no batch ever waits on a parked
 * worker and changing the count changes no batch's content. A {@link LiveTuner} thread sets the
 * count from the measured rates. When the workers may yield (no nice value was asked for), there
 * are two sets of threads: {@code [0, max)} at the process's priority and {@code [max, 2 max)} at
 * {@link WorkerTuner#YIELD_NICE}, and the active workers are the first {@code n} of one set.
 * Linux lets a thread raise its nice value but not lower it back without privilege, so switching
 * sets is how the priority goes back and forth.
 *
 * <p>Ownership: a slot belongs to the pipeline from {@link SlotRing#acquire} until
 * {@link SlotRing#publish}, to the consumer until it calls {@link SlotRing#release}.
 */
public final class Pipeline implements AutoCloseable {
    private final Dataset dataset;
    private final RestartCache cache;
    private final Sampler sampler;
    private final TransformSpec spec;
    private final SlotRing ring;
    private final boolean skipErrors;
    private final long startEpoch;
    // Sequence numbers count batches from batch 0 of startEpoch; a resumed run starts at this one.
    private final long firstSequence;
    // The first epoch's samples and batches: an ordinary epoch's, or fewer when it is the
    // sampler's resumed epoch (what earlier worlds left of it). Tickets and sequence numbers
    // count through it, then through whole epochs.
    private final int firstEpochSamples;
    private final int firstEpochBatches;
    private final long totalTickets;
    private final long totalBatches;
    private final int samplesPerEpoch;
    private final int batchesPerEpoch;
    private final int batchSize;
    private final long sampleBytes;
    private final SlotBody[] slotBodies;
    private final MemorySegment[] slotMemory;
    private final InFlightBatch[] table;
    private final AtomicReferenceArray<List<SampleError>> slotErrors;
    private final EpochOrders orders;
    private final Supplier<IdleStrategy> idleStrategies;
    private final int workerNice;
    private final BooleanSupplier isRunning = this::isRunning;
    private final Thread[] threads;
    // Per worker, written by that worker only (lazySet: the tuner reads totals, never a protocol),
    // a cache line apart: samples done, nanoseconds waiting for a free slot, tid.
    private static final int STRIDE = 8;
    static final int SAMPLES = 0;
    static final int SLOT_WAIT_NANOS = 1;
    static final int TID = 2;
    private final AtomicLongArray counters;
    // Written by the one consumer thread: how long nextSlot waited, summed (the tuner's stall).
    private final AtomicLong consumerWaitNanos = new AtomicLong();
    private final AtomicLong consumerTaken = new AtomicLong();
    private volatile boolean consumerInProcess;
    // The active workers: their count in the low 16 bits, bit 16 set when the yielding set is the
    // active one. One volatile int, so a worker reads count and set together.
    private volatile int mode;
    private final int maxWorkers;
    private final LiveTuner tuner;
    private final AtomicLong nextTicket = new AtomicLong();
    private final ReentrantLock publishLock = new ReentrantLock();
    /** Written under publishLock only. */
    private final SlotHeader slotHeader = new SlotHeader();

    private volatile long nextToAcquire;
    private long nextToPublish;
    // Publish-side (under publishLock), for the epoch being published: did anything decode? An
    // epoch in which nothing did means every file is bad, and every later epoch would be the same.
    private long decodedInEpoch;
    private long failedInEpoch;
    private final List<SampleError> epochErrors = new ArrayList<>();
    private volatile long published;
    // Batches the consumer gets before the pipeline's failure is thrown to it: totalBatches, or
    // fewer once an epoch decoded nothing. Written before that epoch's last batch is published.
    private volatile long deliverable;
    private volatile boolean running = true;
    private volatile Throwable failure;

    /**
     * How a pipeline runs: its threads, where it starts and stops, and what it does with bad samples.
     *
     * @param workers    the worker threads started
     * @param tune       whether a tuner chooses how many of the {@code workers} take samples (all do
     *     at the start); otherwise all of them always do
     * @param startEpoch the epoch to start in
     * @param startBatch the first batch of epoch {@code startEpoch} to produce (to resume mid-epoch:
     *     batch k of epoch e is the same whatever came before it)
     * @param epochs     epochs to produce, the first one counted even when it starts past batch 0;
     *     0 for no end
     * @param skipErrors whether a sample that fails is recorded in its batch (else the pipeline fails)
     * @param workerNice the workers' nice value, 0 to 19 (0: the process's own; see {@link WorkerPriority})
     * @param cache      where the workers read lossless restart-marker copies of the originals, or null
     */
    public record Settings(
            int workers,
            boolean tune,
            long startEpoch,
            int startBatch,
            long epochs,
            boolean skipErrors,
            int workerNice,
            RestartCache cache) {
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
        int workers = settings.workers();
        boolean tune = settings.tune();
        long startEpoch = settings.startEpoch();
        int startBatch = settings.startBatch();
        long epochs = settings.epochs();
        boolean skipErrors = settings.skipErrors();
        int workerNice = settings.workerNice();
        this.cache = settings.cache();
        if (ring.geometry().samplesPerSlot() != sampler.batchSize()
                || ring.geometry().sampleBytes() != spec.sampleBytes()) {
            throw new IllegalArgumentException("ring geometry does not match batch size and transform");
        }
        this.dataset = dataset;
        this.sampler = sampler;
        this.spec = spec;
        this.ring = ring;
        this.skipErrors = skipErrors;
        this.startEpoch = startEpoch;
        this.idleStrategies = idleStrategies;
        this.workerNice = workerNice;
        this.samplesPerEpoch = sampler.samplesPerEpoch();
        this.batchesPerEpoch = sampler.batchesPerEpoch();
        if (sampler.resumedEpoch() >= 0 && sampler.resumedEpoch() != startEpoch) {
            throw new IllegalArgumentException("the sampler resumes epoch " + sampler.resumedEpoch()
                    + " but the pipeline starts in epoch " + startEpoch);
        }
        this.firstEpochSamples = sampler.samplesPerEpoch(startEpoch);
        this.firstEpochBatches = sampler.batchesPerEpoch(startEpoch);
        if (firstEpochBatches == 0) {
            throw new IllegalArgumentException("the resumed epoch " + startEpoch
                    + " has no batch left for this world's ranks: start at the next epoch");
        }
        this.batchSize = sampler.batchSize();
        this.sampleBytes = spec.sampleBytes();
        this.totalTickets = epochs <= 0
                ? Long.MAX_VALUE
                : firstEpochSamples + Math.multiplyExact(epochs - 1, (long) samplesPerEpoch);
        this.totalBatches = epochs <= 0 ? Long.MAX_VALUE : firstEpochBatches + (epochs - 1) * batchesPerEpoch;
        this.deliverable = totalBatches;
        if (startBatch < 0 || startBatch >= firstEpochBatches) {
            throw new IllegalArgumentException(
                    "start batch " + startBatch + " is outside the epoch's " + firstEpochBatches + " batches");
        }
        this.firstSequence = startBatch;
        nextTicket.set((long) startBatch * batchSize);
        nextToAcquire = startBatch;
        nextToPublish = startBatch;
        int slots = ring.geometry().slotCount();
        slotMemory = new MemorySegment[slots];
        slotBodies = new SlotBody[slots];
        for (int s = 0; s < slots; s++) {
            slotMemory[s] = ring.slot(s);
            slotBodies[s] = new SlotBody(ring.geometry()).wrap(slotMemory[s]);
        }
        // One more entry than slots: batch g+entries cannot take a slot before batch g is published.
        table = new InFlightBatch[slots + 1];
        for (int i = 0; i < table.length; i++) {
            table[i] = new InFlightBatch();
        }
        slotErrors = new AtomicReferenceArray<>(slots);
        orders = new EpochOrders(sampler);
        maxWorkers = workers;
        boolean mayYield = tune && workerNice == 0;
        int threadCount = mayYield ? 2 * workers : workers;
        counters = new AtomicLongArray(threadCount * STRIDE);
        mode = workers;
        threads = new Thread[threadCount];
        for (int w = 0; w < threadCount; w++) {
            int id = w;
            threads[w] = Thread.ofPlatform()
                    .name(w < workers ? "stoke-worker-" + w : "stoke-worker-" + (w - workers) + "-yielding")
                    .daemon(true)
                    .unstarted(() -> work(id));
        }
        tuner = tune ? new LiveTuner(this, workers, mayYield) : null;
        for (Thread t : threads) {
            t.start();
        }
        if (tuner != null) {
            tuner.start();
        }
    }

    private boolean isRunning() {
        return running;
    }

    private void work(int id) {
        WorkerPriority.lower(id < maxWorkers ? workerNice : WorkerTuner.YIELD_NICE);
        if (tuner != null) {
            counters.lazySet(id * STRIDE + TID, LiveTuner.threadId());
        }
        IdleStrategy idle = idleStrategies.get();
        if (!awaitActive(id)) {
            return;
        }
        SampleReader reader =
                cache == null ? dataset.reader(spec.maxFileBytes()) : cache.reader(dataset, spec.maxFileBytes());
        try (SampleTransform transform = new SampleTransform(dataset, spec, sampler.seed(), reader)) {
            int[] order = null;
            long orderEpoch = -1;
            while (running) {
                if (!isActive(id, mode) && !awaitActive(id)) {
                    break;
                }
                long ticket = nextTicket.getAndIncrement();
                if (ticket >= totalTickets) {
                    break;
                }
                long epochOffset;
                int position;
                long firstOfEpoch; // the sequence number of the epoch's batch 0
                if (ticket < firstEpochSamples) {
                    epochOffset = 0;
                    position = (int) ticket;
                    firstOfEpoch = 0;
                } else {
                    long t = ticket - firstEpochSamples;
                    epochOffset = 1 + t / samplesPerEpoch;
                    position = (int) (t % samplesPerEpoch);
                    firstOfEpoch = firstEpochBatches + (epochOffset - 1) * batchesPerEpoch;
                }
                int k = position / batchSize;
                int j = position % batchSize;
                long sequence = firstOfEpoch + k;
                InFlightBatch batch = table[(int) (sequence % table.length)];
                long epoch = startEpoch + epochOffset;
                if (j == 0) {
                    if (!begin(id, batch, sequence, epoch, k, idle)) {
                        break;
                    }
                } else if (!awaitBegun(batch, sequence, idle)) {
                    break;
                }
                if (epoch != orderEpoch) {
                    order = orders.get(epoch);
                    orderEpoch = epoch;
                }
                fill(id, transform, batch, j, order[position]);
            }
        } catch (Throwable t) {
            fail(t);
        }
    }

    private boolean isActive(int id, int mode) {
        boolean yieldingSet = id >= maxWorkers;
        return yieldingSet == ((mode & YIELDING) != 0) && id - (yieldingSet ? maxWorkers : 0) < (mode & COUNT);
    }

    private static final int COUNT = 0xFFFF;
    private static final int YIELDING = 1 << 16;

    /** Parks worker {@code id} while the tuner has it inactive; false once the pipeline stops. */
    private boolean awaitActive(int id) {
        while (running && !isActive(id, mode)) {
            LockSupport.park(this);
        }
        return running;
    }

    /**
     * Lets the first {@code n} workers of one set take samples from their next one: the yielding
     * set's when {@code yielding}; the others park after the sample in hand.
     */
    void activeWorkers(int n, boolean yielding) {
        if (n < 1 || n > maxWorkers || (yielding && threads.length == maxWorkers)) {
            throw new IllegalArgumentException(
                    "active workers " + n + (yielding ? " yielding" : "") + " of " + maxWorkers);
        }
        mode = n | (yielding ? YIELDING : 0);
        for (Thread t : threads) {
            LockSupport.unpark(t);
        }
    }

    /** Workers taking samples now. */
    public int activeWorkers() {
        return mode & COUNT;
    }

    /** The tuner's record (changes and windows), or null when the workers are fixed. */
    public TunerLog tuning() {
        return tuner == null ? null : tuner.log();
    }

    long counter(int worker, int field) {
        return counters.get(worker * STRIDE + field);
    }

    private void add(int worker, int field, long value) {
        int i = worker * STRIDE + field;
        counters.lazySet(i, counters.get(i) + value);
    }

    Thread thread(int worker) {
        return threads[worker];
    }

    long consumerWaitNanos() {
        return consumerWaitNanos.get();
    }

    boolean consumerInProcess() {
        return consumerInProcess;
    }

    /** Batches the consumer has taken: the in-process one's, or what consumers count in the ring's header. */
    long consumerTaken() {
        return consumerInProcess ? consumerTaken.get() : ring.ringState().consumed();
    }

    boolean isRunningOrPublishing() {
        return running && failure == null && published + firstSequence < totalBatches;
    }

    /** Waits for this batch's turn, takes a slot, and opens the batch's entry. */
    private boolean begin(int id, InFlightBatch batch, long sequence, long epoch, int k, IdleStrategy idle) {
        idle.reset();
        while (nextToAcquire != sequence) {
            if (!running) {
                return false;
            }
            idle.idle();
        }
        long waitStart = System.nanoTime();
        int slot = ring.acquire(idle, isRunning);
        add(id, SLOT_WAIT_NANOS, System.nanoTime() - waitStart);
        if (slot < 0) {
            return false;
        }
        batch.begin(slot, epoch, k, sampler.batchSize(epoch, k), k == sampler.batchesPerEpoch(epoch) - 1);
        batch.sequence = sequence;
        nextToAcquire = sequence + 1;
        return true;
    }

    private boolean awaitBegun(InFlightBatch batch, long sequence, IdleStrategy idle) {
        idle.reset();
        while (batch.sequence != sequence) {
            if (!running) {
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
        add(id, SAMPLES, 1);
        batch.decodeNanos.addAndGet(elapsed);
        batch.sourceBytes.addAndGet(transform.lastSourceBytes());
        if (batch.remaining.decrementAndGet() == 0) {
            publishFinished();
        }
    }

    /** Publishes, in order, every batch that is finished and whose predecessors are published. */
    private void publishFinished() {
        publishLock.lock();
        try {
            while (nextToPublish < totalBatches && failure == null) {
                long sequence = nextToPublish;
                InFlightBatch batch = table[(int) (sequence % table.length)];
                if (batch.sequence != sequence || batch.remaining.get() != 0) {
                    break;
                }
                List<SampleError> errors = batch.errors();
                boolean nothingDecoded = countDecoded(batch, errors);
                // Plain writes: the publish below is the release that hands them to the consumer.
                slotHeader
                        .wrap(slotMemory[batch.slot])
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
                ring.publish(batch.slot);
                nextToPublish = sequence + 1;
                published = sequence + 1 - firstSequence;
                // For consumers in other processes and status lines (consumer lag).
                ring.ringState().published(published);
                if (nothingDecoded) {
                    // A release after the publish: a consumer that sees the failure finds this batch.
                    ring.ringState().failProducer();
                }
            }
            if (nextToPublish == totalBatches && failure == null) {
                // A release after the last publish: a consumer that sees it and polls once more
                // finds every batch (RingState's class comment).
                ring.ringState().endStream();
            }
        } finally {
            publishLock.unlock();
        }
    }

    /**
     * Counts a batch about to be published towards its epoch; at the epoch's last batch, stops the
     * pipeline with {@link NoSampleDecodedException} if not one of its samples decoded. Under
     * publishLock, in batch order, before the publish: the consumer gets this batch (and its
     * errors), then the exception, never a normal end first.
     *
     * @return whether this batch ends an epoch in which nothing decoded
     */
    private boolean countDecoded(InFlightBatch batch, List<SampleError> errors) {
        decodedInEpoch += batch.size - errors.size();
        failedInEpoch += errors.size();
        for (int i = 0; i < errors.size() && epochErrors.size() < NoSampleDecodedException.KEPT; i++) {
            epochErrors.add(errors.get(i));
        }
        if (!batch.lastInEpoch) {
            return false;
        }
        boolean nothing = decodedInEpoch == 0;
        if (nothing && failure == null) {
            deliverable = batch.sequence + 1;
            failure = new NoSampleDecodedException(batch.epoch, failedInEpoch, epochErrors);
            running = false; // workers already on the next epoch stop; their slots are never published
        }
        decodedInEpoch = 0;
        failedInEpoch = 0;
        epochErrors.clear();
        return nothing;
    }

    private void fail(Throwable t) {
        if (failure == null) {
            failure = t;
        }
        ring.ringState().failProducer();
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
        idle.reset();
        while (true) {
            int slot = ring.pollReady();
            if (slot >= 0) {
                return slot;
            }
            Throwable cause = failure;
            if (cause instanceof NoSampleDecodedException e) {
                if (firstSequence + taken >= deliverable) {
                    throw e;
                }
                // The epoch's last batch is being published under publishLock: wait for it.
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
            } else if (firstSequence + taken >= totalBatches) {
                return -1;
            }
            if (!running) {
                throw new IllegalStateException("loader is closed");
            }
            idle.idle();
        }
    }

    /** Errors recorded for the batch now in {@code slot} (valid between publish and release). */
    public List<SampleError> errors(int slot) {
        return slotErrors.get(slot);
    }

    public SlotRing ring() {
        return ring;
    }

    /** Batches this pipeline publishes in all (from the start batch on; {@link Long#MAX_VALUE} for no end). */
    public long totalBatches() {
        return totalBatches == Long.MAX_VALUE ? Long.MAX_VALUE : totalBatches - firstSequence;
    }

    /** Why a worker died, or null. */
    public Throwable failure() {
        return failure;
    }

    public long publishedBatches() {
        return published;
    }

    /** Worker threads: the fixed count, or the most an auto pipeline runs at once. */
    public int workers() {
        return maxWorkers;
    }

    /** Stops the workers (each finishes at most its current sample) and waits for them. */
    @Override
    public void close() {
        running = false;
        for (Thread t : threads) {
            LockSupport.unpark(t);
        }
        if (tuner != null) {
            tuner.close();
        }
        boolean interrupted = false;
        for (Thread t : threads) {
            while (t.isAlive()) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
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
