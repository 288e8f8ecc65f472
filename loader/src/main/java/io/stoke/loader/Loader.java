package io.stoke.loader;

import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.autoworkers.AutoWorkersLog;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.cache.RestartCacheEpochs;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.sample.EpochCut;
import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.sample.OrderFeed;
import io.stoke.loader.sample.ResumePlan;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.sample.Sampler.PartitionTail;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ListFile;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.loader.work.Pipeline;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingLayout;
import io.stoke.ring.SlotRing;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

/**
 * Decodes a JPEG dataset into batches with a pool of worker threads and a ring of off-heap slots.
 *
 * <pre>{@code
 * try (Loader loader = Loader.builder(ImageFolder.scan(Path.of("train")))
 *         .batchSize(256).workers(2).shuffle(true).seed(42).epochs(1).build()) {
 *     for (Batch batch : loader) {
 *         try (batch) {
 *             consume(batch.pixels(), batch.labels());
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>{@link #next()} is for one consumer thread; a batch may be closed on any thread.
 * {@link #close()} stops the workers, waits for them, invalidates batches still open and frees
 * the ring.
 */
public final class Loader implements BatchSource<Batch>, Iterable<Batch>, AutoCloseable {
    private final Dataset dataset;
    private final Sampler sampler;
    private final ResumePlan resumed;
    private final TransformSpec spec;
    private final ErrorPolicy policy;
    private final SlotRing ring;
    private final Pipeline pipeline;
    private final OrderFeed orderFeed;
    private final IdleStrategy consumerIdle;
    private final Set<Batch> open = ConcurrentHashMap.newKeySet();
    private final long startNanos;
    private final Object statsLock = new Object();
    private long taken;
    private long images;
    private long skipped;
    private long sourceBytes;
    private long firstBatchNanos = -1;
    private long lastBatchNanos;
    private long[] waits = new long[64];
    // Where the consumer is: batches taken of stateEpoch (written by next(), under this).
    private long stateEpoch;
    private int stateBatches;
    // With an order feed: the order of the epoch the consumer is in, for state() (under this).
    private OrderFeed.GivenEpoch stateOrder;
    private volatile boolean closed;

    private Loader(Builder b) {
        this.dataset = b.dataset;
        this.spec = b.transform;
        this.policy = b.policy;
        this.resumed = b.resumePlan();
        this.sampler = b.sampler();
        long startEpoch = resumed != null ? resumed.epoch() : b.startEpoch;
        int startBatch = resumed != null ? resumed.startBatch() : b.startBatch;
        this.stateEpoch = startEpoch;
        this.stateBatches = startBatch;
        this.consumerIdle = b.consumerIdle;
        RingGeometry geometry = geometryOf(b.batchSize, b.slots, spec);
        this.ring = b.ringFactory != null ? b.ringFactory.apply(geometry) : SlotRing.allocate(geometry);
        if (!ring.geometry().equals(geometry)) {
            ring.close();
            throw new IllegalArgumentException(
                    "ring factory gave geometry " + ring.geometry() + ", loader needs " + geometry);
        }
        this.startNanos = System.nanoTime();
        OrderFeed feed = null;
        try {
            if (b.orderFeed != null) {
                if (!b.startCuts.isEmpty()) {
                    throw new IllegalArgumentException("an order feed gives each epoch's order, resumed or not: "
                            + "resume it from its state (resume) or at the saved epoch and batch (startEpoch, "
                            + "startBatch), not from cuts");
                }
                // A resumed epoch's batches were counted in the order it was given: it must come again.
                OrderFeed.GivenEpoch saved = resumed != null && startBatch > 0 ? b.resumedOrder() : null;
                this.stateOrder = saved;
                feed = OrderFeed.open(b.orderFeed, dataset.size(), b.batchSize, saved);
            }
            this.orderFeed = feed;
            this.pipeline = new Pipeline(
                    dataset,
                    sampler,
                    spec,
                    ring,
                    new Pipeline.Settings(
                            b.workers.count(),
                            b.workers.tuned(),
                            startEpoch,
                            startBatch,
                            b.epochs,
                            policy == ErrorPolicy.SKIP,
                            b.workerNice,
                            b.restartCache,
                            feed),
                    b.producerIdle);
        } catch (RuntimeException | Error e) {
            if (feed != null) {
                feed.close();
            }
            ring.close();
            throw e;
        }
    }

    /** The ring geometry that holds batches of {@code batchSize} samples shaped by {@code spec}. */
    public static RingGeometry geometryOf(int batchSize, int slots, TransformSpec spec) {
        int c = spec.crop();
        return spec.output() == TransformSpec.Output.UINT8_HWC
                ? new RingGeometry(slots, batchSize, RingLayout.DTYPE_UINT8, RingLayout.LAYOUT_HWC, c, c, 3)
                : new RingGeometry(slots, batchSize, RingLayout.DTYPE_FLOAT32, RingLayout.LAYOUT_CHW, 3, c, c);
    }

    public static Builder builder(Dataset dataset) {
        return new Builder(dataset);
    }

    /** A loader over torchvision's ImageFolder layout ({@code root/<class>/<image>}). */
    public static Builder imageFolder(Path root) {
        return new Builder(ImageFolder.scan(root));
    }

    /** A loader over a list file ({@code <path> <label>} per line). */
    public static Builder listFile(Path file) {
        return new Builder(ListFile.read(file));
    }

    /**
     * The next batch in order, waiting for it if the workers are behind; {@code null} after the
     * last batch of the last epoch.
     *
     * @throws SampleException when the batch held a sample that failed under {@link ErrorPolicy#FAIL};
     *     its slot is already returned and the next call goes on with the following batch
     * @throws NoSampleDecodedException after the last batch of an epoch in which not one sample
     *     decoded, under either policy (every file is bad: the loader stops instead of cycling
     *     through them forever when {@code epochs(0)}); every later call throws it again
     * @throws IllegalStateException when the loader is closed or a worker died
     */
    public synchronized Batch next() {
        if (closed) {
            throw new IllegalStateException("loader is closed");
        }
        long start = System.nanoTime();
        int slot = pipeline.nextSlot(taken, consumerIdle);
        if (slot < 0) {
            return null;
        }
        long now = System.nanoTime();
        taken++;
        Batch batch =
                new Batch(ring.geometry(), slot, ring.slot(slot), pipeline.errors(slot), now - start, this::release);
        // A given order is the sampler's own, padding included: none is Stoke's.
        batch.padded(orderFeed != null ? 0 : sampler.paddedIn(batch.epoch(), (int) batch.batchIndex()));
        stateEpoch = batch.epoch();
        stateBatches = (int) batch.batchIndex() + 1;
        if (orderFeed != null && (stateOrder == null || stateOrder.epoch() != stateEpoch)) {
            stateOrder = orderFeed.given(stateEpoch); // null only where the feed has moved 4 epochs past it
        }
        record(batch, now - start, now);
        batch.closeAndThrowIfFailed();
        open.add(batch);
        if (closed) {
            // close() ran while we built the batch; do not hand out memory that is going away.
            batch.abandon();
            throw new IllegalStateException("loader is closed");
        }
        return batch;
    }

    private void record(Batch batch, long wait, long now) {
        synchronized (statsLock) {
            if (firstBatchNanos < 0) {
                firstBatchNanos = now - startNanos;
            }
            lastBatchNanos = now - startNanos;
            int n = (int) (taken - 1);
            if (n >= waits.length) {
                waits = Arrays.copyOf(waits, waits.length * 2);
            }
            waits[n] = wait;
            images += batch.size();
            skipped += batch.skipped().size();
            sourceBytes += batch.stats().sourceBytes();
        }
    }

    private void release(int slot) {
        // Batches close themselves; drop ours and give the slot back unless the ring is gone.
        open.removeIf(b -> b.slot() == slot && b.isClosed());
        if (!closed) {
            ring.release(slot);
        }
    }

    /** Iterates batches until the last epoch ends. Each batch should be closed by the caller. */
    @Override
    public Iterator<Batch> iterator() {
        return new BatchIterator(this::next);
    }

    public LoaderStats stats() {
        synchronized (statsLock) {
            long elapsed = taken == 0 ? System.nanoTime() - startNanos : lastBatchNanos;
            RestartCacheEpochs epochs = pipeline.cacheEpochs();
            return new LoaderStats(
                    taken,
                    images,
                    skipped,
                    sourceBytes,
                    elapsed,
                    firstBatchNanos,
                    Arrays.copyOf(waits, (int) taken),
                    epochs == null ? null : epochs.stats());
        }
    }

    public Sampler sampler() {
        return sampler;
    }

    /**
     * What the restart cache ({@link Builder#restartCache}) did in each epoch whose last batch is
     * published, oldest first (a view, to which later epochs are added); empty without a cache.
     */
    public List<RestartCacheEpochs.Epoch> restartCacheEpochs() {
        RestartCacheEpochs epochs = pipeline.cacheEpochs();
        return epochs == null ? List.of() : epochs.epochs();
    }

    /**
     * Where this rank is, to resume from ({@link Builder#resume}), on this world or another: after
     * the batches {@link #next()} has handed out (a batch that failed under {@link
     * ErrorPolicy#FAIL} counts as handed out).
     *
     * <p>With an {@link Builder#orderFeed order feed} the state says so, with the epoch's order as
     * given ({@link LoaderState#given()}): the seed cannot draw it again, so a loader resumed from
     * it needs a feed that gives that epoch again, and checks that it is the same order.
     *
     * @throws IllegalStateException with an order feed, when the feed had read more than the 4
     *     epochs it keeps past the one the consumer is in before its order was recorded here
     */
    public synchronized LoaderState state() {
        LoaderState state = LoaderState.of(sampler, sampler.rank(), sampler.worldSize(), stateEpoch, stateBatches)
                .withDataset(dataset.fingerprint());
        if (orderFeed == null) {
            return state;
        }
        OrderFeed.GivenEpoch order =
                stateOrder != null && stateOrder.epoch() == stateEpoch ? stateOrder : orderFeed.given(stateEpoch);
        if (order == null && stateBatches > 0) {
            throw new IllegalStateException("state(): epoch " + stateEpoch + "'s order has left the order feed (it "
                    + "keeps the last 4 epochs read), so the state could not say which order its " + stateBatches
                    + " batches were taken in: feed each epoch's order at most 4 epochs ahead of the one consumed");
        }
        return state.withGiven(new LoaderState.Given(LoaderState.ORDER_FEED, order));
    }

    /** How this loader resumed ({@link ResumePlan#report()} says it in a sentence), or null when it did not. */
    public ResumePlan resumed() {
        return resumed;
    }

    public Dataset dataset() {
        return dataset;
    }

    public TransformSpec transform() {
        return spec;
    }

    public RingGeometry geometry() {
        return ring.geometry();
    }

    /** Worker threads: the fixed count, or the most an auto loader runs ({@link #activeWorkers()} now). */
    public int workers() {
        return pipeline.workers();
    }

    /** Workers taking samples now: {@link #workers()}, or fewer while an auto loader's auto-workers hold some parked. */
    public int activeWorkers() {
        return pipeline.activeWorkers();
    }

    /** What an auto loader's auto-workers did (every change and why, the windows they watched), or null with fixed workers. */
    public AutoWorkersLog autoWorkers() {
        return pipeline.autoWorkers();
    }

    /**
     * The old name of {@link #autoWorkers()}, from before "tune" meant only the offline search.
     *
     * @deprecated use {@link #autoWorkers()}; this goes in the next release
     */
    @Deprecated(forRemoval = true)
    public AutoWorkersLog tuning() {
        return autoWorkers();
    }

    /** The loader's ring (for stages that pin or export its memory). */
    public SlotRing ring() {
        return ring;
    }

    /**
     * Whether the workers wait for an epoch's order that the {@link Builder#orderFeed order feed} has
     * not given yet, with no slot filling (false without a feed): every batch given is published, or
     * waits for a slot the consumer holds, and the consumer gives the order when it starts reading
     * that epoch. A worker stuck in a fill is not waiting for the order.
     */
    public boolean awaitingOrder() {
        return orderFeed != null && orderFeed.awaited() && ring.counts().filling() == 0;
    }

    /** Batches the workers have published so far. */
    public long publishedBatches() {
        return pipeline.publishedBatches();
    }

    /** Batches the loader will publish in all, from its start batch on ({@link Long#MAX_VALUE} when epochs is 0). */
    public long totalBatches() {
        return pipeline.totalBatches();
    }

    /**
     * Why the workers stopped early, or null while they have not (for producers without an
     * in-process consumer): a worker's exception, or {@link NoSampleDecodedException}.
     */
    public Throwable failure() {
        return pipeline.failure();
    }

    /** Whether every worker thread has exited (true after {@link #close()}). */
    public boolean workersStopped() {
        return pipeline.stopped();
    }

    /**
     * Stops the workers (each finishes at most the sample in hand), waits for them, invalidates
     * every batch still open, and frees the ring. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        pipeline.close();
        if (orderFeed != null) {
            orderFeed.close();
        }
        synchronized (this) {
            // next() holds this lock while it touches the ring; after it, no consumer is inside.
            for (Batch b : open) {
                b.abandon();
            }
            open.clear();
            ring.close();
        }
    }

    /** Options for a {@link Loader}; every one has a default. */
    public static final class Builder {
        /** {@link #shuffleWindow} not set: the dataset's default. */
        private static final int DEFAULT_WINDOW = -1;

        private final Dataset dataset;
        private int batchSize = 256;
        private Workers workers = Workers.auto();
        private int slots = 4;
        private boolean shuffle;
        private long seed;
        private boolean dropLast;
        private int rank;
        private int worldSize = 1;
        private PartitionTail partitionTail = PartitionTail.PAD;
        private long epochs = 1;
        private long startEpoch;
        private int startBatch;
        private List<LoaderState> resumeFrom = List.of();
        private List<EpochCut> startCuts = List.of();
        private Path orderFeed;
        private RestartCache restartCache;
        private int shuffleWindow = DEFAULT_WINDOW;
        private int workerNice;
        private TransformSpec transform = TransformSpec.defaults();
        private ErrorPolicy policy = ErrorPolicy.FAIL;
        private IdleStrategy consumerIdle =
                new BackoffIdleStrategy(100, 10, TimeUnit.MICROSECONDS.toNanos(1), TimeUnit.MILLISECONDS.toNanos(1));
        private Function<RingGeometry, SlotRing> ringFactory;
        private Supplier<IdleStrategy> producerIdle = () ->
                new BackoffIdleStrategy(10, 10, TimeUnit.MICROSECONDS.toNanos(10), TimeUnit.MILLISECONDS.toNanos(1));

        private Builder(Dataset dataset) {
            this.dataset = dataset;
        }

        /**
         * Over tar shards, shuffle within windows of {@code shards} shards rather than globally
         * (see {@link Sampler}): for remote shards, which a bounded shard cache holds a window of at a
         * time. 0 shuffles globally; ignored for a folder or list. The default is {@link
         * Datasets#DEFAULT_REMOTE_WINDOW} over remote shards (a global shuffle would need every
         * shard at once) and 0 over local ones, the same as the command line's and Python's.
         */
        public Builder shuffleWindow(int shards) {
            if (shards < 0) {
                throw new IllegalArgumentException("shuffle window must not be negative: " + shards);
            }
            this.shuffleWindow = shards;
            return this;
        }

        /**
         * The order these settings give (the loader's {@link Loader#sampler()}), without a loader:
         * with {@link #resume}, its first epoch is what the saved world left.
         */
        public Sampler sampler() {
            ResumePlan plan = resumePlan();
            return plan == null ? order().resuming(startEpoch, startCuts) : plan.apply(order());
        }

        /** The dataset these settings read. */
        public Dataset dataset() {
            return dataset;
        }

        /** The transform set (default {@link TransformSpec#defaults()}). */
        public TransformSpec transform() {
            return transform;
        }

        /** The epochs set (default 1). */
        public long epochs() {
            return epochs;
        }

        /** The first epoch set (default 0); a resumed sampler's own comes first ({@link Sampler#resumedEpoch()}). */
        public long startEpoch() {
            return startEpoch;
        }

        /** The first epoch's first batch set (default 0); a resume plan's own comes first ({@link #resumePlan()}). */
        public int startBatch() {
            return startBatch;
        }

        /** The order feed set, or null. */
        public Path orderFeed() {
            return orderFeed;
        }

        /** The restart cache set, or null. */
        public RestartCache restartCache() {
            return restartCache;
        }

        /** The error policy set (default {@link ErrorPolicy#FAIL}). */
        public ErrorPolicy onError() {
            return policy;
        }

        private Sampler order() {
            Sampler sampler =
                    new Sampler(dataset.size(), batchSize, shuffle, seed, dropLast, rank, worldSize, partitionTail);
            int window = shuffleWindow();
            if (!(dataset instanceof ShardDataset sharded) || window == 0) {
                return sampler;
            }
            Shards shards = sharded.shards();
            int[] first = new int[shards.shardCount() + 1];
            for (int s = 0; s <= shards.shardCount(); s++) {
                first[s] = shards.firstSample(s);
            }
            return sampler.withShardWindow(first, window);
        }

        /** The shuffle window these settings give: the one set, else the default for this dataset. */
        public int shuffleWindow() {
            if (shuffleWindow != DEFAULT_WINDOW) {
                return shuffleWindow;
            }
            return dataset instanceof ShardDataset sharded && sharded.shards().cached()
                    ? Datasets.DEFAULT_REMOTE_WINDOW
                    : 0;
        }

        /** Samples per batch (default 256). */
        public Builder batchSize(int batchSize) {
            positive("batch size", batchSize);
            this.batchSize = batchSize;
            return this;
        }

        /** Exactly this many decoding threads (default: {@link Workers#auto()}). */
        public Builder workers(int workers) {
            positive("workers", workers);
            this.workers = Workers.fixed(workers);
            return this;
        }

        /**
         * Decoding threads: a fixed count, or {@link Workers#auto()} (the default): as many as the
         * consumer needs, at most the cores the process may use, chosen live from measured rates.
         */
        public Builder workers(Workers workers) {
            this.workers = java.util.Objects.requireNonNull(workers, "workers");
            return this;
        }

        /** Ring slots, i.e. batches decoded ahead of the consumer plus those it holds (default 4). */
        public Builder slots(int slots) {
            positive("slots", slots);
            this.slots = slots;
            return this;
        }

        /** Shuffle each epoch with {@link #seed} (default off: dataset order). */
        public Builder shuffle(boolean shuffle) {
            this.shuffle = shuffle;
            return this;
        }

        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Drop each epoch's last partial batch of this rank (default off): PyTorch DataLoader's {@code drop_last}. */
        public Builder dropLast(boolean dropLast) {
            this.dropLast = dropLast;
            return this;
        }

        /**
         * Deliver only partition {@code rank} of {@code worldSize} (default 0 of 1), the rank's share
         * of each epoch: every rank gets the same number of samples, see {@link #partitionTail}.
         */
        public Builder partition(int rank, int worldSize) {
            this.rank = rank;
            this.worldSize = worldSize;
            return this;
        }

        /**
         * {@link #partition}.
         *
         * @deprecated "shard" means a tar shard only; use {@link #partition}.
         */
        @Deprecated(since = "0.2", forRemoval = true)
        public Builder shard(int rank, int worldSize) {
            return partition(rank, worldSize);
        }

        /**
         * When the dataset does not split evenly over the ranks (see {@link Sampler}): {@link PartitionTail#PAD}
         * (the default) repeats samples from the start of the epoch's permutation so that every rank
         * gets {@code ceil(N/W)}, the repeats marked by {@link Batch#isPadding}; {@link PartitionTail#DROP}
         * gives every rank {@code floor(N/W)}. PyTorch's {@code DistributedSampler(drop_last=...)}.
         */
        public Builder partitionTail(PartitionTail tail) {
            this.partitionTail = tail; // the Sampler checks it, with the partition's size in view
            return this;
        }

        /**
         * {@link #partitionTail} with the tail under its old name.
         *
         * @deprecated "shard" means a tar shard only; use {@link #partitionTail}.
         */
        @Deprecated(since = "0.2", forRemoval = true)
        @SuppressWarnings("removal")
        public Builder shardTail(Sampler.ShardTail tail) {
            return partitionTail(tail == null ? null : tail.partitionTail());
        }

        /** Epochs to deliver (default 1); 0 runs until closed. */
        public Builder epochs(long epochs) {
            notNegative("epochs", epochs);
            this.epochs = epochs;
            return this;
        }

        /** The first epoch's number (to resume a run: the order of epoch e depends only on e). */
        public Builder startEpoch(long startEpoch) {
            notNegative("start epoch", startEpoch);
            this.startEpoch = startEpoch;
            return this;
        }

        /**
         * The first batch of the first epoch (default 0). Batch k of epoch e, and every random
         * choice in it, depends only on (seed, e, k, rank, world size), so a run stopped after K
         * batches of epoch e and resumed with {@code startEpoch(e).startBatch(K)} delivers the rest
         * of that epoch exactly as the uninterrupted run would have. {@link #epochs} counts that
         * partial epoch as one.
         */
        public Builder startBatch(int startBatch) {
            notNegative("start batch", startBatch);
            this.startBatch = startBatch;
            return this;
        }

        /**
         * Resumes from saved states ({@link Loader#state()}, or Python's {@code state_dict()}), on
         * this builder's world, which may have other ranks and another batch size than the saved
         * one: what the saved ranks left of their epoch is split over this world (see {@link
         * ResumePlan}), and the next epoch is whole. Give one state (every rank of its world is
         * taken to have reached its step) or every rank's (ranks that stopped at different steps:
         * nothing lost, nothing repeated). Instead of {@link #startEpoch}/{@link #startBatch}.
         */
        public Builder resume(List<LoaderState> states) {
            if (states.isEmpty()) {
                throw new IllegalArgumentException("no loader state to resume from");
            }
            this.resumeFrom = List.copyOf(states);
            return this;
        }

        /**
         * Reads lossless restart-marker copies of the dataset's JPEGs (a folder's or list's files,
         * or its shards' members) from {@code restartCache}, filling it as the originals are read (see
         * {@link RestartCache}): the same pixels, and from the next epoch on the region decoder
         * seeks in every JPEG. The caller owns the restart cache and closes it after the loader.
         */
        public Builder restartCache(RestartCache restartCache) {
            this.restartCache = restartCache;
            return this;
        }

        /**
         * {@link #restartCache}.
         *
         * @deprecated Stoke has four caches; use {@link #restartCache}, which names this one.
         */
        @Deprecated(since = "0.2", forRemoval = true)
        public Builder cache(RestartCache cache) {
            return restartCache(cache);
        }

        /**
         * The start epoch is what {@code cuts} (oldest first) left of it, split over this world:
         * the low-level form of {@link #resume}, for a caller that made its own {@link ResumePlan}
         * (its epoch, start batch and cuts). Empty: a whole epoch.
         */
        public Builder epochCuts(List<EpochCut> cuts) {
            this.startCuts = List.copyOf(cuts);
            return this;
        }

        /**
         * Takes each epoch's order as given at {@code feed} ({@link OrderFeed}: a pipe a Python
         * sampler's orders are written to, one record per epoch from the start epoch) instead of
         * drawing it: the order, batch boundaries included, is the feed's, and the workers wait for
         * an epoch's record before its first batch. The shuffle, seed's order, world and {@code
         * dropLast} then shape nothing (the seed still keys the random crops); the loader runs until
         * stopped ({@code epochs(0)}). {@link Loader#state()} then saves the epoch's order as given,
         * and {@link #resume} from that state goes on at the batch it reached, provided the feed
         * gives that epoch's order again.
         */
        public Builder orderFeed(Path feed) {
            this.orderFeed = feed;
            return this;
        }

        /**
         * With an {@link #orderFeed order feed} and a state to {@link #resume} from: the order its epoch
         * was given, which the feed must give again as it was (its batches were counted in it); else null.
         */
        public OrderFeed.GivenEpoch resumedOrder() {
            if (orderFeed == null || resumeFrom.isEmpty() || resumeFrom.get(0).given() == null) {
                return null;
            }
            return resumeFrom.get(0).given().order();
        }

        /** The plan {@link #resume} gives on this builder's world, or null without states; refusals as {@link ResumePlan#of}. */
        public ResumePlan resumePlan() {
            if (resumeFrom.isEmpty()) {
                return null;
            }
            if (startEpoch != 0 || startBatch != 0 || !startCuts.isEmpty()) {
                throw new IllegalArgumentException(
                        "resume from states, or from a start epoch, batch and cuts, not both");
            }
            return orderFeed != null
                    ? ResumePlan.fed(resumeFrom, dataset.fingerprint())
                    : ResumePlan.of(resumeFrom, order(), dataset.fingerprint());
        }

        public Builder transform(TransformSpec transform) {
            this.transform = transform;
            return this;
        }

        public Builder onError(ErrorPolicy policy) {
            this.policy = policy;
            return this;
        }

        /** How {@link Loader#next()} waits (default: spin, yield, then park up to 200 us). */
        public Builder consumerIdle(IdleStrategy idle) {
            this.consumerIdle = idle;
            return this;
        }

        /**
         * The decoding threads' nice value, 0 (the default: the process's priority) to 19: a
         * consumer on the same cores, a model's threads, then runs first and the workers decode
         * on the CPU it leaves (Linux; said once on standard error where it cannot be set).
         */
        public Builder workerNice(int nice) {
            if (nice < 0 || nice > 19) {
                throw new IllegalArgumentException("worker nice value must be 0 to 19: " + nice);
            }
            this.workerNice = nice;
            return this;
        }

        /** How each worker waits for a free slot (default: back off to 1 ms parks). */
        public Builder producerIdle(Supplier<IdleStrategy> idle) {
            this.producerIdle = idle;
            return this;
        }

        /**
         * Where the slots live (default: anonymous memory of this process). The factory gets the
         * geometry the loader needs and returns an empty ring of exactly that geometry, e.g. one
         * in a shared-memory file that another process consumes ({@code stoke serve}); the
         * loader closes it. With a ring that another process consumes, do not call
         * {@link Loader#next()}: watch {@link Loader#publishedBatches()} instead.
         */
        public Builder ring(Function<RingGeometry, SlotRing> factory) {
            this.ringFactory = factory;
            return this;
        }

        /** Starts the workers. */
        public Loader build() {
            // Every worker decodes with libturbojpeg: when it is missing, say so (naming the
            // package) here, not as each worker's ExceptionInInitializerError.
            TurboJpeg.ensureLoaded();
            return new Loader(this);
        }

        // Each option is checked once, here where a caller sets it: the CLI and the Python package
        // pass theirs through, and the pipeline behind trusts what the builder let through.
        private static void positive(String what, int value) {
            if (value < 1) {
                throw new IllegalArgumentException(what + " must be positive, not " + value);
            }
        }

        private static void notNegative(String what, long value) {
            if (value < 0) {
                throw new IllegalArgumentException(what + " must not be negative, not " + value);
            }
        }
    }
}
