package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.CudaException;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.cuda.HostRegistration;
import io.stoke.ffm.cuda.Nvjpeg;
import io.stoke.loader.BatchSource;
import io.stoke.loader.BatchStats;
import io.stoke.loader.Loader;
import io.stoke.loader.cache.RestartCache;
import io.stoke.loader.cache.RestartCacheEpochs;
import io.stoke.loader.decode.SampleTransform;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.internal.Joins;
import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.sample.OrderFeed;
import io.stoke.loader.sample.ResumePlan;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.loader.work.EpochDecodeCount;
import io.stoke.ring.RingLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * Decodes a dataset's JPEGs on a CUDA device into {@link DeviceBatch}es: the GPU decode stage.
 * EXPERIMENTAL: built and tested against the nvJPEG and CUDA test doubles, which check the wiring,
 * not a GPU's pixels or rates (docs/gpu.md says what has run where).
 *
 * <pre>{@code
 * Loader.Builder settings = Loader.imageFolder(root).batchSize(256);
 * try (GpuDecodeStage gpu = GpuDecodeStage.builder(settings).nvjpeg(NvjpegLibrary.load().nvjpeg().orElseThrow()).build()) {
 *     for (DeviceBatch b; (b = gpu.next()) != null; ) {
 *         try (b) {
 *             b.waitOn(myStream);
 *             embed(b.pointer(), b.shape());   // uint8 [n, 224, 224, 3], or float32 [n, 3, 224, 224]
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>Per batch, in the sampler's order (the loader's: the same samples at the same positions):
 * <ol>
 *   <li>CPU reader threads read the files ({@link Builder#readers}), one batch ahead of the device:
 *       the originals, or a restart cache's sequential copies of them ({@link Builder#restartCache}).
 *   <li>nvJPEG decodes what it takes of them ({@link GpuJpegDecoder}: the hardware engine where the
 *       device has one) at full size, and {@link DeviceResize} resizes and crops each with the CPU
 *       resampler's own coefficients straight into the batch's device buffer: the evaluation
 *       transform's resize and centre crop, or the training transform's random resized crop and
 *       flip, drawn from (seed, epoch, sample) as the CPU draws them; bilinear or bicubic, antialiased.
 *   <li>What nvJPEG does not take (PNG, WebP, CMYK, progressive on the engine, a damaged header) the
 *       reader threads decode with the loader's CPU transform, and it is copied into its place. Each
 *       image is decoded once, on one side. The CPU reads such a file again. The decode thread goes
 *       on to the next batches meanwhile, and the batch is handed out, in order, once its CPU part
 *       has ended.
 *   <li>With {@link Builder#shareWithCpu}, the CPU threads also decode a share of the GPU's batches,
 *       or whole batches of their own in the background ({@link Builder#cpuBatches}), read and
 *       decoded there as the loader does, and handed out in their places in the order.
 *   <li>With {@link TransformSpec.Output#FLOAT32_CHW}, the normalisation kernel turns the uint8 batch
 *       into float32 CHW with the transform's mean and std.
 *   <li>With an augmentation policy or random erasing, the rest runs on the host instead, where the
 *       CPU's transform runs it: the device's crops are copied back, the reader threads run the
 *       policy (its draws following the crop's and the flip's on the sample's stream), the output's
 *       conversion and the erasing ({@link SampleTransform#finish}), and the batch is copied up as
 *       the transform's output. The device decodes and resizes; the CPU's share of each image is the
 *       part after the resize.
 * </ol>
 *
 * <p>Pixels: nvJPEG decodes at full size, so the GPU's images equal the CPU path's with
 * {@code DctScaling.NONE} up to the two decoders' IDCT (and their upsampling where nvJPEG writes no planes) (on a GPU, measured by
 * {@code stoke gpu-check --decode}); the CPU's default decodes large JPEGs at a reduced DCT scale first,
 * and differs from both by that. Images left to the CPU are decoded as the loader decodes them.
 *
 * <p>Threads and ownership: one decode thread owns the decoder, the resize and the device buffers
 * while it fills them; the reader threads own one reader and one CPU transform each. A batch handed
 * out belongs to the consumer until closed, as with {@link DeviceStage}. Bad samples follow
 * {@link Builder#onError}: {@link ErrorPolicy#FAIL} makes {@link #next()} throw
 * {@link SampleException} for that batch and go on, {@link ErrorPolicy#SKIP} zeroes the sample and
 * lists it in {@link DeviceBatch#skipped()}.
 */
public final class GpuDecodeStage implements BatchSource<DeviceBatch>, AutoCloseable {
    private static final String STAGE = "GPU decode stage";
    private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();
    private static final Comparator<SampleError> BY_POSITION = Comparator.comparingInt(SampleError::position);
    /** The evaluation transform's tables kept by image size: 8 MiB, some 650 sizes of ImageNet's at a 224 crop. */
    private static final long EVAL_TABLE_INTS = 1L << 21;
    /** How often the decode thread looks at the order feed while it waits for an epoch's order. */
    private static final long ORDER_POLL_NANOS = 1_000_000;

    private final Dataset dataset;
    private final Sampler sampler;
    private final TransformSpec spec;
    private final RandomResizedCrop train; // null: the evaluation transform
    private final long seed;
    /** The training transforms' tables the decode thread drew itself (its readers had not): for tests. */
    private final AtomicLong decodeThreadDraws = new AtomicLong();
    /** The reader threads' time on the GPU's batches, by phase. */
    private final ReaderClock readerClock = new ReaderClock();
    // The decode thread's: each position's image size where the device decoded it, for the host's tail.
    private final int[] tailWidths;
    private final int[] tailHeights;
    // With the CPU sharing the decode: the balance, and timed events around the GPU side of the last
    // K + 2 batches, read when done (the decode thread never waits for them).
    private final DecodeSplit split;
    /** The size of the CPU threads' round {@link #share} started for the batch being decoded: the decode thread's. */
    private int roundImages;
    /** {@link #share}'s candidates, from the batch's end: their positions and estimated costs. */
    private final int[] shareOrder;

    private final long[] shareUnits;
    /**
     * Device buffers beside the K for batches the CPU threads still work on ({@link
     * Builder#cpuBatches}): the GPU's whose round runs, and with a split the CPU's whole batches, at
     * most this many of those at once.
     */
    private final int cpuBatches;
    /** The threads each batch's nvJPEG call is split over ({@link Builder#decodeThreads}). */
    private final int decodeThreads;
    /** For tests: every other batch goes whole to the CPU, whatever the rates. */
    private final boolean wholeEveryOther;
    /** Whether the consumer's own work runs on this GPU ({@link Builder#consumerOnGpu}). */
    private final boolean consumerOnGpu;
    /** Whether the readers draw the training transform's tables (else the decode thread does): off only in tests. */
    private final boolean readersDraw;
    /** For tests: what each reader thread's reader is wrapped in (a read held back), else identity. */
    private final UnaryOperator<SampleReader> readerWrap;
    /** What the restart cache did each epoch, told at the epoch's last batch by {@link #next}; null without one. */
    private final RestartCacheEpochs cacheEpochs;
    /**
     * The decode thread's: rung by the reader threads as each task ends and as each whole batch does,
     * and by the consumer as it takes a batch and gives a buffer back. The decode thread waits on it
     * for a batch's reads, handing out meanwhile what has ended, and for a consumer that is behind.
     */
    private final Doorbell doorbell = new Doorbell();
    /** Per device entry, the whole batch of the CPU's it holds: made on first use, the decode thread's. */
    private final EncodedBatch[] wholeFiles;
    /** The whole batches the reader threads decode in the background, oldest first. */
    private final WholeBatchQueue wholeQueue = new WholeBatchQueue();
    /**
     * Batches dispatched and not yet handed out, in the sampler's order: the GPU's (decoded, or the
     * one being decoded) and the CPU's whole ones. The decode thread's.
     */
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    /** Whole batches in {@link #pending}; the end of the last one measured; batches dispatched. The decode thread's. */
    private int wholeInFlight;

    private long lastWholeEnd;
    private long dispatched;
    /** The mean bytes of an image read, smoothed: what a whole batch is first foreseen from. The decode thread's. */
    private double bytesPerImage = Double.NaN;
    /** The reader threads' examiners, one each, from the decoder: the decode thread's, set when it opens. */
    private GpuJpegDecoder.Examiner[] examiners;
    /** The reader threads' draws of the training transform's tables, one each; null for evaluation. The decode thread's. */
    private CropTableDraw[] cropDraws;

    private final CudaEvent[] gpuStart;
    private final CudaEvent[] gpuEnd;
    private final int[] gpuImagesTimed;
    private int timedBatches;
    private final ErrorPolicy policy;
    private final long firstEpoch;
    private final int firstBatch;
    private final long epochs;
    // Where each epoch's order is given (a Python sampler's), or null: the sampler draws it. Opened
    // once the stage has opened (ready), so that a stage that fails to open, and leaves the loader
    // to decode on the CPU, has read nothing from it; until then the cursor counts it as not given.
    // Read by the decode thread's cursor, which never waits on it while a batch is still to be handed out.
    private final Path orderFeedPath;
    private final OrderFeed.GivenEpoch resumedOrder;
    private volatile OrderFeed orderFeed;
    // Set by the decode thread while it waits for the feed's next epoch with every batch before it
    // handed out: the producer then waits on its consumer, and a stall report has nothing to say.
    private volatile boolean waitingForOrder;
    private final int batchSize;
    private final int readerCount;
    private final int inFlight;
    private final boolean floatOutput; // float32 CHW batches, else uint8 HWC
    // The augmentation policy and random erasing run on the host, after the device's resize: its
    // crops are copied back, the reader threads finish them as the CPU's transform does, and the
    // batch goes up as the transform's output (normalised there, not by the kernel).
    private final boolean hostTail;
    private final boolean normalizeOnDevice;
    // The device's resize writes uint8 into the entry's staging buffer (normalised from there, or
    // copied back for the host's tail), else straight into its output.
    private final boolean staged;
    private final int crop;
    private final long pixelBytes; // uint8 HWC bytes of one sample: what the device's resize writes
    // Bytes of one sample the reader threads write: pixelBytes, or the output's with hostTail.
    private final long hostBytes;
    // With hostTail: the device's uint8 crops of a batch, copied back into pinned memory; the decode thread's.
    private final MemorySegment tailCrops;
    private final CudaDriver driver;
    private final Nvjpeg nvjpeg;
    private final boolean preferHardware;
    private final CudaContext context;
    private final ThreadLocal<Boolean> current = new ThreadLocal<>();
    private final StageResources resources = new StageResources();
    private final CudaStream stream;
    private final DeviceKernels kernels;
    private final DeviceEntry[] entries;
    private final BlockingQueue<DeviceEntry> free;
    private final Handoff handoff;
    // The batch being decoded, the one being read, and the ones before: nvJPEG's asynchronous work may
    // still read a batch's files after its decode call returns (the hardware engine copies them on
    // the stream), so a batch's buffers are refilled only once filesDone[f], recorded after its
    // decode and resize were queued, has completed: a few batches later, by when it normally has.
    // A batch whose CPU round still runs after its decode (filesOwner[f]) keeps its slot until handed.
    private final EncodedBatch[] files = new EncodedBatch[4];
    private final CudaEvent[] filesDone = new CudaEvent[4];
    private final boolean[] filesQueued = new boolean[4];
    private final Pending[] filesOwner = new Pending[4];
    /** An epoch in which nothing decoded ended the run (the consumer is told): the decode thread's. */
    private boolean ended;

    private final ReaderThreads readerThreads;
    private final Thread decoder;
    /** nvJPEG opened (or failed to): {@link #backend}; {@link #whenOpened} runs after it. */
    private final CompletableFuture<GpuJpegDecoder.Backend> opened = new CompletableFuture<>();
    /**
     * The constructor waits for this: nvJPEG opened, or, where it opens aside ({@link
     * #wholeWhileOpening}), the decode thread about to hand out the CPU's whole batches meanwhile.
     */
    private final CompletableFuture<Void> ready = new CompletableFuture<>();
    /**
     * Under {@code auto} with whole batches: nvJPEG opens on a thread of its own while the CPU
     * threads decode the first batches whole, so that the stage's first batch does not wait for it.
     */
    private final boolean wholeWhileOpening;
    /** How long nvJPEG took to open: written before the completion that publishes it (opened, or the aside future). */
    private long nvjpegOpenNanos;
    /** Batches dispatched whole while nvJPEG opened aside: the decode thread's, read by stats() after. */
    private volatile long openingBatches;

    private final AtomicLong batches = new AtomicLong();
    private final AtomicLong gpuImages = new AtomicLong();
    private final AtomicLong cpuImages = new AtomicLong();
    private final AtomicLong sharedImages = new AtomicLong();
    private final AtomicLong failedImages = new AtomicLong();
    private final AtomicLong wholeBatches = new AtomicLong();
    private final AtomicLong wentOn = new AtomicLong();
    /** Whole batches given the CPU threads because the consumer was behind ({@link #consumerBehind}). */
    private final AtomicLong behindBatches = new AtomicLong();
    /** Batches handed out and not yet taken from which the consumer counts as behind. */
    static final int BEHIND = 2;
    /** What {@link #dispatch} returns for a batch it left for later: the consumer is behind, no buffer is free. */
    private static final Pending DEFERRED = new Pending(null, -1, false, 0);
    // The decode thread's wall time by phase (DecodeThreadTimes' order), added once per batch and phase.
    private static final int READS = 0,
            BUFFER = 1,
            QUEUE = 2,
            NVJPEG = 3,
            RESIZE = 4,
            WAIT_CPU = 5,
            HANDOFF = 6,
            GPU_SPAN = 7,
            GPU_SPAN_BATCHES = 8;
    private final AtomicLongArray times = new AtomicLongArray(9);
    // The split's rates as the decode thread last left them, for stats() (written once per batch).
    private volatile double balanceGpuSpan = Double.NaN;
    private volatile double balanceGpuHost = Double.NaN;
    private volatile double balanceCpu = Double.NaN;
    private volatile double balanceCpuPerUnit = Double.NaN;
    private volatile double balanceWhole = Double.NaN;
    private final EpochDecodeCount epochCount = new EpochDecodeCount(); // the decode thread's, as the loader counts
    private final MemorySegment floatZeros; // one float32 sample of 0.0, pinned: what a skipped sample becomes
    private final Arena hostArena; // the stage's host memory: floatZeros, labels, indices, pinned host buffers
    private volatile String backendNote;
    /** Whether nvJPEG writes planes that the colour step converts as the CPU does ({@link GpuJpegDecoder#convertsColour}). */
    private volatile boolean convertsColour;
    // How long each phase of opening took (OpeningTimes' order): the constructor's three, then the
    // decode thread's three, written before it completes `opened`, which the constructor waits for.
    private final long[] opening = new long[6];
    private volatile boolean closed;
    private final AtomicBoolean closing = new AtomicBoolean();

    /** What the DeviceBatches handed out ask of this stage: kept off the stage's public face. */
    private final DeviceBatchOwner owner = new DeviceBatchOwner() {
        @Override
        public void returned(DeviceEntry entry) {
            entry.handedOut = null;
            free.offer(entry);
            doorbell.ring(); // a buffer for a whole batch, where the decode thread waits for one
        }

        @Override
        public long sampleBytes() {
            return floatOutput ? pixelBytes * 4 : pixelBytes;
        }

        @Override
        public long[] shape(int n) {
            return floatOutput ? new long[] {n, 3, crop, crop} : new long[] {n, crop, crop, 3};
        }

        @Override
        public int dtype() {
            return floatOutput ? RingLayout.DTYPE_FLOAT32 : RingLayout.DTYPE_UINT8;
        }

        @Override
        public CudaStream stream() {
            return stream;
        }

        @Override
        public CudaDriver driver() {
            return driver;
        }

        @Override
        public void ensureCurrent() {
            GpuDecodeStage.this.ensureCurrent();
        }
    };

    private GpuDecodeStage(Builder b) {
        TransformSpec s = b.spec;
        String refused = refusal(s);
        if (refused != null) {
            throw new IllegalArgumentException(refused);
        }
        if (b.nvjpeg == null) {
            throw new IllegalArgumentException("no nvJPEG library given: NvjpegLibrary.load() finds one");
        }
        this.dataset = b.dataset;
        this.sampler = b.sampler;
        this.spec = s;
        this.train = s.train();
        this.seed = sampler.seed();
        this.policy = b.policy;
        this.firstEpoch = sampler.resumedEpoch() >= 0 ? sampler.resumedEpoch() : b.startEpoch;
        this.firstBatch = b.startBatch;
        this.epochs = b.epochs;
        this.batchSize = sampler.batchSize();
        this.shareOrder = new int[batchSize];
        this.shareUnits = new long[batchSize];
        this.tailWidths = new int[batchSize];
        this.tailHeights = new int[batchSize];
        this.readerCount = b.readers;
        this.inFlight = b.inFlight;
        this.floatOutput = s.output() == TransformSpec.Output.FLOAT32_CHW;
        this.hostTail = s.augment() != null || s.erasing() != null;
        this.normalizeOnDevice = floatOutput && !hostTail;
        this.staged = normalizeOnDevice || hostTail;
        this.crop = s.crop();
        this.pixelBytes = 3L * crop * crop;
        this.hostBytes = hostTail && floatOutput ? pixelBytes * 4 : pixelBytes;
        this.nvjpeg = b.nvjpeg;
        this.preferHardware = b.preferHardware;
        this.split = b.shareWithCpu ? new DecodeSplit() : null;
        this.cpuBatches = b.cpuBatches;
        this.decodeThreads = b.decodeThreads;
        this.wholeEveryOther = b.wholeEveryOther && b.shareWithCpu && cpuBatches > 0;
        this.wholeWhileOpening = split != null && cpuBatches > 0 && !wholeEveryOther;
        this.consumerOnGpu = b.consumerOnGpu;
        this.readerWrap = b.readerWrap;
        this.cacheEpochs = b.restartCache == null ? null : new RestartCacheEpochs(b.restartCache); // counts from here
        this.readersDraw = b.readersDraw;
        int timedSlots = b.shareWithCpu ? b.inFlight + 2 : 0;
        this.gpuStart = new CudaEvent[timedSlots];
        this.gpuEnd = new CudaEvent[timedSlots];
        this.gpuImagesTimed = new int[timedSlots];
        long start = System.nanoTime();
        this.driver = b.driver != null ? b.driver : DeviceOpening.driver();
        this.context = DeviceOpening.primaryContext(driver, b.device);
        resources.keep(context);
        this.orderFeedPath = b.orderFeed;
        this.resumedOrder = b.resumedOrder;
        try {
            ensureCurrent();
            long contextMade = System.nanoTime();
            opening[0] = contextMade - start;
            this.stream = resources.keep(CudaStream.create(driver));
            this.kernels = resources.keep(new DeviceKernels(driver));
            long kernelsLoaded = System.nanoTime();
            opening[1] = kernelsLoaded - contextMade;
            if (split != null) {
                for (int t = 0; t < gpuStart.length; t++) {
                    gpuStart[t] = resources.keep(CudaEvent.createTimed(driver));
                    gpuEnd[t] = resources.keep(CudaEvent.createTimed(driver));
                }
            }
            Arena arena = Arena.ofShared();
            resources.keep(arena::close);
            this.hostArena = arena;
            this.floatZeros = normalizeOnDevice ? arena.allocate(pixelBytes * 4, 64) : null;
            if (floatZeros != null) {
                resources.keep(HostRegistration.register(driver, floatZeros));
            }
            this.tailCrops = hostTail ? arena.allocate(batchSize * pixelBytes, 64) : null;
            if (tailCrops != null) {
                resources.keep(HostRegistration.register(driver, tailCrops));
            }
            // Batches the CPU still works on hold a buffer each (the GPU's until their round ends, the
            // CPU's whole ones from their start): the pool has room for them beside the K.
            int pool = inFlight + cpuBatches;
            this.entries = new DeviceEntry[pool];
            this.wholeFiles = new EncodedBatch[pool];
            this.free = new ArrayBlockingQueue<>(pool);
            for (int i = 0; i < pool; i++) {
                long bytes = batchSize * pixelBytes;
                DeviceBuffer staging = staged ? resources.keep(DeviceBuffer.allocate(driver, bytes)) : null;
                DeviceBuffer out = resources.keep(DeviceBuffer.allocate(driver, floatOutput ? bytes * 4 : bytes));
                CudaEvent done = resources.keep(CudaEvent.create(driver));
                CudaEvent released = resources.keep(CudaEvent.create(driver));
                entries[i] = new DeviceEntry(
                        i,
                        staging,
                        out,
                        done,
                        done,
                        released,
                        arena.allocate(4L * batchSize, 64),
                        arena.allocate(8L * batchSize, 64));
                entries[i].gpuDecoded = new boolean[batchSize];
                free.add(entries[i]);
            }
            this.handoff = new Handoff(STAGE, pool + 4);
            for (int f = 0; f < files.length; f++) {
                files[f] = new EncodedBatch(
                        batchSize, readerCount, doorbell); // closed by close(), once nothing reads them
                filesDone[f] = resources.keep(CudaEvent.create(driver));
            }
            // Each thread makes its own reader and CPU transform: their buffers belong to it. The CPU
            // writes uint8 as nvJPEG's share is, and the normalisation kernel then takes the whole
            // batch; with the host's tail, the CPU writes the transform's output, its own and the device's.
            TransformSpec cpu = hostTail ? s : s.withOutput(TransformSpec.Output.UINT8_HWC);
            // With a restart cache both of a thread's readers go through it: the GPU's reads are
            // served the sequential copies (the same coefficients, so the same pixels, and a
            // progressive original's copy is one the hardware engine takes), and the CPU's decodes
            // seek in them. Misses go to the cache's fillers, paced by the threads' idle time; a
            // thread never copies as it decodes: its CPU round may be what a batch waits for.
            RestartCache cache = b.restartCache;
            this.readerThreads = resources.keep(new ReaderThreads(
                    readerCount,
                    () -> readerWrap.apply(RestartCache.readerThrough(cache, dataset, s.maxFileBytes())),
                    () -> new SampleTransform(
                            dataset, cpu, sampler.seed(), RestartCache.readerThrough(cache, dataset, s.maxFileBytes())),
                    doorbell,
                    idle -> {
                        if (cache != null) {
                            cache.pace(idle, () -> false, readerCount);
                        }
                    }));
            if (split != null && cpuBatches > 0) {
                readerThreads.background(wholeQueue);
            }
            this.decoder =
                    Thread.ofPlatform().name("stoke-gpu-decoder").daemon().unstarted(this::decodeLoop);
            opening[2] = System.nanoTime() - kernelsLoaded;
            decoder.start();
        } catch (RuntimeException | Error e) {
            closeFiles();
            resources.closeAll(null);
            throw e;
        }
        try {
            ready.get(); // the decoder and the resize are made (and closed) by the decode thread
        } catch (InterruptedException | ExecutionException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            RuntimeException cause = e.getCause() instanceof RuntimeException r
                    ? r
                    : new IllegalStateException("the GPU decoder did not open", e);
            try {
                close();
            } catch (RuntimeException suppressed) {
                cause.addSuppressed(suppressed);
            }
            throw cause;
        }
        if (orderFeedPath != null) {
            try {
                orderFeed = OrderFeed.open(orderFeedPath, dataset.size(), batchSize, resumedOrder);
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }
    }

    /**
     * Opens a stage with {@code builder}, or, where this machine cannot decode on the GPU (no CUDA
     * driver, no device, the driver refusing the device asked for), passes the one-line reason,
     * ending "; decoding on the CPU", to {@code report} and returns empty, so that the caller decodes
     * on the CPU. Other errors (a refused transform, a nvJPEG failure) still throw.
     */
    public static Optional<GpuDecodeStage> openOrCpu(Builder builder, Consumer<String> report) {
        try {
            return Optional.of(builder.build());
        } catch (DeviceUnavailableException | CudaException e) {
            report.accept(e.getMessage() + "; decoding on the CPU");
            return Optional.empty();
        }
    }

    /**
     * Why {@code spec} cannot be decoded by this stage, in one sentence, or null when it can: every
     * transform of the loader can (an augmentation policy and random erasing run on the host, after
     * the device's resize).
     */
    public static String refusal(TransformSpec spec) {
        return null;
    }

    /**
     * A stage over the dataset, order ({@link Loader.Builder#sampler()}), transform, epochs and error
     * policy of a loader's settings, from where they start (a resume plan's epoch and batch, or the
     * start epoch and batch set).
     *
     * @throws IllegalArgumentException for settings this stage cannot follow ({@link #refusal(Loader.Builder)})
     */
    public static Builder builder(Loader.Builder settings) {
        String refused = refusal(settings);
        if (refused != null) {
            throw new IllegalArgumentException(refused);
        }
        ResumePlan plan = settings.resumePlan();
        Builder b = new Builder(settings.dataset(), settings.sampler(), settings.transform())
                .epochs(settings.epochs())
                .startEpoch(plan != null ? plan.epoch() : settings.startEpoch())
                .startBatch(plan != null ? plan.startBatch() : settings.startBatch())
                .onError(settings.onError())
                .restartCache(settings.restartCache());
        if (settings.orderFeed() != null) {
            // As the loader: a resumed epoch's batches were counted in the order it was given.
            b.orderFeed(settings.orderFeed(), plan != null && plan.startBatch() > 0 ? settings.resumedOrder() : null);
        }
        return b;
    }

    /**
     * Why a loader's settings cannot be decoded by this stage, in one sentence, or null when they
     * can: {@link #refusal(TransformSpec)}.
     */
    public static String refusal(Loader.Builder settings) {
        String refused = refusal(settings.transform());
        if (refused != null) {
            return refused;
        }
        return null;
    }

    /** A stage over {@code dataset} in {@code sampler}'s order, transformed by {@code spec}. */
    public static Builder builder(Dataset dataset, Sampler sampler, TransformSpec spec) {
        return new Builder(dataset, sampler, spec);
    }

    // ------------------------------------------------------------------ consumer side

    /**
     * The next batch on the device, waiting while none is ready; null after the last. Its decode may
     * still be running: order work after {@link DeviceBatch#readyEvent()}. For one consumer thread.
     * Waits while all K device buffers are held, so close one before asking for more than K.
     *
     * @throws SampleException for a batch with a sample that could not be decoded, under
     *     {@link ErrorPolicy#FAIL} (the stage goes on with the next batch)
     * @throws NoSampleDecodedException after the last batch of an epoch in which not one sample
     *     decoded, under either policy, as the loader throws it; every later call throws it again
     * @throws IllegalStateException when the stage is closed, or failed (the cause says how)
     */
    @Override
    public DeviceBatch next() {
        try {
            DeviceBatch b = handoff.next(owner, () -> closed);
            if (cacheEpochs != null && b != null && b.lastInEpoch()) {
                cacheEpochs.ended(b.epoch()); // as the loader's publisher counts them, at the epoch's last batch
            }
            return b;
        } finally {
            doorbell.ring(); // a decode thread holding the GPU back while the consumer was behind looks again
        }
    }

    private void ensureCurrent() {
        if (current.get() == null) {
            context.makeCurrent();
            current.set(Boolean.TRUE);
        }
    }

    // ------------------------------------------------------------------ decode thread

    private void decodeLoop() {
        GpuJpegDecoder jpeg = null;
        DeviceResize resize = null;
        CompletableFuture<GpuJpegDecoder> openingAside = null;
        BatchCursor cursor = new BatchCursor(
                sampler, orderFeedPath == null ? null : () -> orderFeed, firstEpoch, firstBatch, epochs, batchSize);
        boolean more = true; // whether the cursor is on a batch not yet dispatched
        try {
            try {
                long t0 = System.nanoTime();
                ensureCurrent();
                if (wholeWhileOpening) {
                    // nvJPEG's own opening takes 0.6 s on an H200 (run-4): it opens on a thread of its
                    // own while the CPU threads decode whole batches, handed out in order from now.
                    openingAside = openAside();
                    ready.complete(null);
                    more = wholeWhileOpening(cursor, openingAside);
                    jpeg = awaitOpened(openingAside);
                } else {
                    jpeg = GpuJpegDecoder.open(
                            context, nvjpeg, preferHardware, batchSize, spec.maxPixels(), decodeThreads);
                    nvjpegOpenNanos = System.nanoTime() - t0;
                }
                long t1 = System.nanoTime();
                // Each reader examines the JPEGs it reads (nvJPEG's header read, and on the engine its
                // parse and support check): this thread keeps the batched call alone.
                examiners = new GpuJpegDecoder.Examiner[readerThreads.size()];
                if (train != null && readersDraw) {
                    // And, under the training transform, draws each one's resize tables after examining it.
                    cropDraws = new CropTableDraw[examiners.length];
                    for (int r = 0; r < cropDraws.length; r++) {
                        cropDraws[r] = new CropTableDraw(spec, seed);
                    }
                }
                Future<?>[] current = new Future<?>[examiners.length];
                for (int r = 0; r < examiners.length; r++) {
                    examiners[r] = jpeg.newExaminer();
                    current[r] = readerThreads.submit(r, (reader, transform) -> ensureCurrent());
                }
                for (Future<?> c : current) {
                    try {
                        c.get();
                    } catch (ExecutionException e) { // a reader thread that could not start, as its reads would say
                        throw e.getCause() instanceof RuntimeException re
                                ? re
                                : new IllegalStateException("a GPU decode reader failed", e.getCause());
                    }
                }
                long t2 = System.nanoTime();
                resize = new DeviceResize(driver, kernels, batchSize);
                opening[3] = nvjpegOpenNanos;
                opening[4] = t2 - t1;
                opening[5] = System.nanoTime() - t2;
                backendNote = jpeg.backendNote();
                convertsColour = jpeg.convertsColour();
                ready.complete(null);
                opened.complete(jpeg.backend()); // publishes `opening` to the constructor's thread
            } catch (RuntimeException | Error e) {
                handoff.fail(e instanceof RuntimeException r ? r : new IllegalStateException(e));
                ready.completeExceptionally(e);
                opened.completeExceptionally(e);
                return;
            }
            if (ended) {
                return; // an epoch in which nothing decoded ended the run while nvJPEG opened
            }
            EvalTableCache evalTables = train == null ? new EvalTableCache(new Resampler(spec), EVAL_TABLE_INTS) : null;
            ResampleTables[] tables = new ResampleTables[train == null ? 0 : batchSize]; // the boxes' tables
            CropTableDraw ownDraw = train == null ? null : new CropTableDraw(spec, seed);
            for (int i = 0; i < tables.length; i++) {
                tables[i] = new ResampleTables();
            }
            int f = 0;
            Pending now = more && (wholeWhileOpening || cursor.advance()) ? dispatch(f, cursor, true) : null;
            while (!closed) {
                if (now == null && cursor.awaiting) {
                    // The order feed has not given the next epoch's order: hand out what was, then wait.
                    now = awaitOrder(f, cursor);
                    if (closed || ended) {
                        return;
                    }
                    continue;
                }
                if (now == null) {
                    // Nothing left for the GPU: what the CPU still decodes ends the run.
                    if (!ended && deliver(Integer.MAX_VALUE)) {
                        end();
                    }
                    return;
                }
                EncodedBatch batch = files[f];
                long t0 = System.nanoTime();
                long handing = awaitReads(batch);
                if (handing < 0) {
                    return; // handing out ended the run
                }
                long t1 = System.nanoTime();
                DeviceEntry entry = takeEntry();
                if (entry == null) {
                    return; // an epoch in which nothing decoded ended the run
                }
                long t2 = System.nanoTime();
                times.addAndGet(READS, t1 - t0 - handing);
                times.addAndGet(BUFFER, t2 - t1);
                // With a split, the CPU's share starts first, then the next batch's reads queue behind it.
                int shared = split == null ? 0 : share(batch, entry);
                int next = (f + 1) % files.length;
                // The next batches: whole to the CPU where the split says so, and the next for the GPU
                // read while this one decodes.
                Pending after = cursor.advance() ? dispatch(next, cursor, false) : null;
                if (ended) {
                    return;
                }
                times.addAndGet(QUEUE, System.nanoTime() - t2);
                decode(now, batch, entry, shared, jpeg, resize, evalTables, tables, ownDraw);
                filesDone[f].record(stream);
                filesQueued[f] = true;
                if (!deliver(0)) {
                    return;
                }
                while (after == DEFERRED && !ended) {
                    // The consumer was behind with no buffer free for a whole batch: this batch is
                    // handed out, and the next waits for a buffer or for the consumer to catch up.
                    after = dispatch(next, cursor, true);
                }
                if (ended) {
                    return;
                }
                now = after;
                f = next;
            }
        } catch (InterruptedException e) {
            // close() interrupts a decode thread that waits for a buffer, the readers or the consumer
        } catch (RuntimeException | Error e) {
            handoff.fail(e instanceof RuntimeException r ? r : new IllegalStateException(e));
        } finally {
            // The constructor waits for this; a failure before the decoder opened must reach it.
            RuntimeException failure = handoff.failure();
            RuntimeException stopped =
                    failure != null ? failure : new IllegalStateException("the GPU decode thread stopped");
            ready.completeExceptionally(stopped);
            opened.completeExceptionally(stopped);
            if (jpeg == null && openingAside != null) {
                jpeg = openingAside.exceptionally(e -> null).join(); // closed below, once it has opened
            }
            try {
                stream.synchronize(); // nothing queued may still use what the decoder and the resize own
            } catch (RuntimeException e) {
                handoff.fail(e);
            }
            if (resize != null) {
                resize.close();
            }
            if (jpeg != null) {
                for (EncodedBatch f : files) {
                    if (f != null) {
                        f.drainReads(); // reads queued may still examine with the decoder's examiners
                    }
                }
                jpeg.close();
            }
        }
    }

    /**
     * With an order feed, once every batch of the epochs given so far is dispatched: hands out each
     * as it ends (the consumer gives the next epoch's order only once it has read them), and looks at
     * the feed every {@value #ORDER_POLL_NANOS} ns until the order comes; then dispatches the cursor's
     * batch as {@link #dispatch} does. Null when the cursor ran out again (the epoch's batches went
     * whole to the CPU; {@link BatchCursor#awaiting} still set) or the run ended, or on close.
     */
    private Pending awaitOrder(int f, BatchCursor at) throws InterruptedException {
        doorbell.arm(); // a batch ending rings it
        try {
            while (!closed && !ended) {
                if (at.advance()) {
                    break;
                }
                if (!at.awaiting) {
                    return null; // the feed gave the stage's last epoch
                }
                if (!deliver(0)) {
                    return null;
                }
                waitingForOrder = pending.isEmpty();
                doorbell.park(ORDER_POLL_NANOS);
            }
        } finally {
            waitingForOrder = false;
            doorbell.disarm();
        }
        return closed || ended ? null : dispatch(f, at, true);
    }

    /** Opens nvJPEG on a thread of its own, which rings the doorbell when it has (or has failed). */
    private CompletableFuture<GpuJpegDecoder> openAside() {
        CompletableFuture<GpuJpegDecoder> opening = new CompletableFuture<>();
        Thread.ofPlatform().name("stoke-gpu-nvjpeg-open").daemon().start(() -> {
            try {
                long t0 = System.nanoTime();
                ensureCurrent();
                GpuJpegDecoder jpeg = GpuJpegDecoder.open(
                        context, nvjpeg, preferHardware, batchSize, spec.maxPixels(), decodeThreads);
                nvjpegOpenNanos = System.nanoTime() - t0; // before the completion that publishes it
                opening.complete(jpeg);
            } catch (RuntimeException | Error e) {
                opening.completeExceptionally(e);
            } finally {
                doorbell.ring();
            }
        });
        return opening;
    }

    /**
     * While nvJPEG opens: dispatches the cursor's batches whole to the CPU threads as buffers allow,
     * and hands them out in order as they end, until it has opened. Returns whether the cursor is on
     * a batch still to dispatch; false when it ran out (what is left is handed out after), or
     * handing out ended the run ({@link #ended}).
     */
    private boolean wholeWhileOpening(BatchCursor at, Future<GpuJpegDecoder> opening) throws InterruptedException {
        boolean more = at.advance();
        doorbell.arm(); // before the checks: a whole batch ending, a buffer back or nvJPEG opened rings it
        try {
            while (!opening.isDone()) {
                if (!more && at.awaiting) {
                    more = at.advance(); // the order feed may have given the epoch since
                }
                if (more && roomForWhole()) {
                    dispatchWhole(at);
                    openingBatches++;
                    more = at.advance();
                    continue;
                }
                if (!deliver(0)) {
                    return false;
                }
                if (!opening.isDone() && !(more && roomForWhole())) {
                    if (at.awaiting) {
                        doorbell.park(ORDER_POLL_NANOS);
                    } else {
                        doorbell.park();
                    }
                }
            }
        } finally {
            doorbell.disarm();
        }
        return more;
    }

    /** The decoder opened aside; its failure thrown as it came. */
    private static GpuJpegDecoder awaitOpened(Future<GpuJpegDecoder> opening) throws InterruptedException {
        try {
            return opening.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        }
    }

    /**
     * Waits for {@code batch}'s reads, handing out meanwhile each earlier batch as it ends (a whole
     * batch of the CPU's, a GPU batch whose CPU round ran on): with slow reads, from a remote source,
     * a finished batch does not wait for the next one's files. Returns the time spent handing out
     * (counted as such, not as the reads'), or -1 when handing out ended the run.
     */
    private long awaitReads(EncodedBatch batch) throws InterruptedException {
        long handing = 0;
        doorbell.arm(); // before the checks: a read or a batch ending after one of them rings
        try {
            while (!batch.readsDone()) {
                long t0 = System.nanoTime();
                boolean going = deliver(0);
                handing += System.nanoTime() - t0;
                if (!going) {
                    return -1;
                }
                if (!batch.readsDone()) {
                    doorbell.park();
                }
            }
        } finally {
            doorbell.disarm();
        }
        batch.checkReads(); // done: a reader's failure is thrown here
        return handing;
    }

    /**
     * After the last batch: once the stream's work is done, so that a device failure found then is
     * the consumer's error, not lost after a clean end.
     */
    private void end() throws InterruptedException {
        stream.synchronize();
        handoff.end();
    }

    /** A batch dispatched and not yet handed out: the GPU's, or a whole one of the CPU's. */
    private static final class Pending {
        final EncodedBatch whole; // the CPU's whole batch, else null: the GPU's, in files[slot]
        final long epoch;
        final boolean last;
        final int size;
        DeviceEntry entry; // a whole batch's from its start; the GPU's once decoded, unless rejected
        RuntimeException rejected; // what the consumer gets instead, under ErrorPolicy.FAIL
        boolean decoded; // the GPU's: decoded (entry or rejected set), or its CPU round still running
        // The GPU's, while its CPU round runs after its decode (finishGpu ends it): its slot and
        // what the rest of it needs.
        int slot = -1;
        boolean cpuOpen;
        boolean wentOn; // the decode thread went on to the next batch before the round ended
        int onGpu;
        int shared;
        int roundImages;
        long sourceBytes;
        long decodeCpuNanos;

        Pending(EncodedBatch whole, long epoch, boolean last, int size) {
            this.whole = whole;
            this.epoch = epoch;
            this.last = last;
            this.size = size;
        }
    }

    /**
     * Dispatches the cursor's batch and those after it: whole to the CPU threads while the split
     * says so ({@link DecodeSplit#whole}) or the consumer is behind ({@link #consumerBehind}), and the
     * first it does not, read into {@code files[f]} for the GPU. Returns that one, or null when the
     * cursor ran out first, or {@link #DEFERRED} when the consumer is behind, no buffer is free and
     * {@code mayWait} is false (a batch of the GPU's waits to be decoded first): the cursor is then on
     * the batch still to dispatch.
     */
    private Pending dispatch(int f, BatchCursor at, boolean mayWait) throws InterruptedException {
        while (split != null && roomForWhole() && wholeNext(at.size)) {
            dispatchWhole(at);
            if (!at.advance()) {
                return null;
            }
        }
        // Batches wait for the consumer (BEHIND of them, and until none does): the GPU's time is
        // better left to the consumer's own work (a model on the same device, which the decode's
        // kernels and copies slow), and the CPU threads keep up. So the next batches go whole to
        // them while a buffer is free; with none free the GPU gets no batch either, and the decode
        // thread waits (DEFERRED first, where a batch of the GPU's is still to be decoded and handed
        // out before the whole ones) until a buffer comes back or no batch waits for the consumer.
        for (boolean behind = consumerBehind(BEHIND); behind && !ended; behind = consumerBehind(1)) {
            if (roomForWhole()) {
                dispatchWhole(at);
                behindBatches.incrementAndGet();
                if (!at.advance()) {
                    return null;
                }
                continue;
            }
            if (!mayWait) {
                return DEFERRED;
            }
            // Armed before the checks: a whole batch ending, the consumer taking a batch or giving a
            // buffer back rings it.
            doorbell.arm();
            try {
                if (!deliver(0)) {
                    return null;
                }
                if (consumerBehind(1) && !roomForWhole()) {
                    boolean noBuffer = free.isEmpty(); // else the CPU threads have all the whole batches they may
                    long t0 = System.nanoTime();
                    doorbell.park();
                    if (noBuffer) {
                        times.addAndGet(BUFFER, System.nanoTime() - t0);
                    }
                }
            } finally {
                doorbell.disarm();
            }
        }
        while (filesOwner[f] != null && !ended) {
            int before = pending.size();
            deliver(1); // the batch these buffers hold waits for its CPU round: it ends first
            if (pending.size() == before && !ended) {
                throw new IllegalStateException("the batch holding read buffers " + f + " was not handed out");
            }
        }
        if (ended) {
            return null;
        }
        if (filesQueued[f]) {
            filesDone[f].synchronize(); // nothing queued still reads these files
            filesQueued[f] = false;
        }
        EncodedBatch batch = files[f];
        batch.begin(at.epoch, at.batch, at.order, at.start, at.size, at.last);
        batch.startReads(readerThreads, examiners, cropDraws, readerClock);
        Pending p = new Pending(null, at.epoch, at.last, at.size);
        p.slot = f;
        filesOwner[f] = p;
        pending.add(p);
        dispatched++;
        return p;
    }

    /** Whether a whole batch can start: fewer than {@code cpuBatches} run, and a buffer is free. */
    private boolean roomForWhole() {
        return wholeInFlight < cpuBatches && !free.isEmpty();
    }

    /** Dispatches the cursor's batch whole to the CPU threads, in a free buffer (there is one). */
    private void dispatchWhole(BatchCursor at) {
        DeviceEntry entry = free.poll(); // only this thread takes from the pool: not null
        EncodedBatch whole = wholeFiles[entry.index];
        if (whole == null) {
            whole = wholeFiles[entry.index] = new EncodedBatch(batchSize, readerCount, doorbell);
        }
        whole.begin(at.epoch, at.batch, at.order, at.start, at.size, at.last);
        whole.startWhole(hostPixels(entry), hostBytes);
        Pending p = new Pending(whole, at.epoch, at.last, at.size);
        p.entry = entry;
        pending.add(p);
        wholeInFlight++;
        dispatched++;
        wholeQueue.add(whole);
        readerThreads.wake();
    }

    /**
     * Whether at least {@code batches} handed out wait for a consumer whose work is on the GPU, so
     * that the next batches go whole to the CPU threads ({@code auto} only, not with the tests' fixed
     * alternation). A consumer on the CPU is left the cores instead: the GPU decodes as the rates say.
     */
    private boolean consumerBehind(int batches) {
        return consumerOnGpu && split != null && cpuBatches > 0 && !wholeEveryOther && handoff.waiting() >= batches;
    }

    /** Whether the next batch, of {@code size}, goes whole to the CPU threads: a free buffer is there. */
    private boolean wholeNext(int size) {
        if (wholeEveryOther) {
            return dispatched % 2 == 1;
        }
        long backlog = 0;
        for (Pending p : pending) {
            if (p.whole != null) {
                backlog += p.whole.wholeLeft();
            }
        }
        // Beside it, the GPU can fill the free buffers but the one it takes, and the one the consumer
        // gives back when it takes the GPU's batch being decoded now.
        return split.whole(size, backlog, free.size(), bytesPerImage, readerThreads.size());
    }

    /**
     * A device buffer for the GPU's next batch. Where none is free and the oldest batch not handed
     * out waits for the CPU (a whole batch of the CPU's, or the GPU's batch's round), waits for that
     * and hands it (the consumer gives buffers back only for batches it has); else waits for the
     * consumer. Null when handing out ended the run.
     */
    private DeviceEntry takeEntry() throws InterruptedException {
        for (; ; ) {
            DeviceEntry e = free.poll();
            if (e != null) {
                return e;
            }
            Pending head = pending.peek();
            if (head == null || (head.whole == null && !head.decoded)) {
                return free.take();
            }
            if (!deliver(1)) {
                return null;
            }
        }
    }

    /**
     * Hands out the batches at the head of {@link #pending} that are done, in order, waiting for the
     * CPU's part of the first {@code wait} of them (a whole batch, a GPU batch's round), not for a GPU
     * batch not yet decoded. False when an epoch in which nothing decoded ended the run (the consumer
     * is told; {@link #ended}).
     */
    private boolean deliver(int wait) throws InterruptedException {
        for (Pending p; (p = pending.peek()) != null; wait--) {
            if (p.whole != null) {
                if (wait <= 0 && !p.whole.wholeDone()) {
                    return true;
                }
                long waitStart = System.nanoTime();
                p.whole.awaitWhole();
                times.addAndGet(WAIT_CPU, System.nanoTime() - waitStart);
                finishWhole(p);
            } else if (!p.decoded) {
                return true;
            } else if (p.cpuOpen) {
                if (wait <= 0 && !files[p.slot].cpuDone()) {
                    if (!p.wentOn) {
                        p.wentOn = true;
                        wentOn.incrementAndGet();
                    }
                    return true;
                }
                finishGpu(p);
            }
            if (p.slot >= 0) {
                filesOwner[p.slot] = null;
            }
            pending.poll();
            long t0 = System.nanoTime();
            List<SampleError> errors;
            if (p.rejected != null) {
                errors = p.rejected instanceof SampleException se ? se.errors() : List.of();
                handoff.put(p.rejected);
            } else {
                errors = p.entry.skipped;
                p.entry.sequence = batches.getAndIncrement(); // in the order handed out
                handoff.put(p.entry);
            }
            times.addAndGet(HANDOFF, System.nanoTime() - t0);
            NoSampleDecodedException none = epochCount.count(p.epoch, p.size, errors, p.last);
            if (none != null) {
                // Every file of the epoch failed, and every later epoch would: stop, as the loader does.
                handoff.fail(none);
                ended = true;
                return false;
            }
        }
        return true;
    }

    /**
     * Completes the CPU's whole batch {@code p}, every image decoded into its entry's host memory:
     * copies it up as one (the uint8 the normalisation kernel takes, or the transform's output
     * with the host's tail), then as the GPU's batches are completed.
     */
    private void finishWhole(Pending p) {
        EncodedBatch b = p.whole;
        DeviceEntry entry = p.entry;
        int n = b.size;
        wholeInFlight--;
        long end = b.wholeEndNanos();
        split.wholeMeasured(end - Math.max(b.wholeStartNanos(), lastWholeEnd), n, bytesPerImage, readerThreads.size());
        lastWholeEnd = end;
        balanceWhole = split.wholeNanosPerImage();
        if (entry.waitForRelease) {
            stream.waitFor(entry.released); // the consumer's reads of the last batch here come first
            entry.waitForRelease = false;
        }
        MemorySegment host = entry.hostPixels(driver, batchSize * hostBytes); // startWhole's
        List<SampleError> errors = b.errors;
        errors.clear();
        for (int i = 0; i < n; i++) {
            if (b.cpuStatus[i] != SampleStatus.OK) {
                errors.add(
                        new SampleError(i, b.samples[i], dataset.name(b.samples[i]), b.cpuStatus[i], b.cpuMessages[i]));
                if (policy == ErrorPolicy.SKIP) {
                    host.asSlice(i * hostBytes, hostBytes).fill((byte) 0); // 0.0 in float32 too
                }
            }
        }
        if (errors.isEmpty() || policy == ErrorPolicy.SKIP) {
            // The uint8 the normalisation kernel takes, else the output itself (the host's tail wrote it).
            DeviceBuffer target = normalizeOnDevice ? entry.staging : entry.out;
            target.copyFromHostAsync(0, host.asSlice(0, n * hostBytes), stream);
        }
        entry.hostUsed = true;
        wholeBatches.incrementAndGet();
        sharedImages.addAndGet(n - errors.size());
        failedImages.addAndGet(errors.size());
        RuntimeException rejected = complete(b, entry, errors, b.wholeSourceBytes(), b.cpuNanos());
        if (rejected != null) {
            free.offer(entry);
            p.entry = null;
            p.rejected = rejected;
        }
    }

    /**
     * Starts the CPU threads' round of {@code batch}: every file nvJPEG will not take (the readers'
     * examination found them: on the hardware engine, progressive JPEGs; PNG, WebP, a JPEG cut
     * short), and a share of the JPEGs it would ({@link DecodeSplit}: the last ones, so that both
     * sides finish together), costliest first. One round for both, so that what nvJPEG leaves is
     * balanced against the GPU too, rather than run after the share. Returns the share;
     * {@link #roundImages} is the round's size.
     */
    private int share(EncodedBatch batch, DeviceEntry entry) {
        measureGpu();
        int must = 0;
        double units = 0;
        double largest = 0;
        for (int i = 0; i < batch.size; i++) {
            if (batch.mustCpu(i)) {
                batch.leaveToCpu(i);
                must++;
                units += batch.cost(i);
                largest = Math.max(largest, batch.cost(i));
            }
        }
        // The candidates from the batch's end, as the share takes them.
        int candidates = 0;
        for (int i = batch.size - 1; i >= 0; i--) {
            if (batch.jpeg[i] && !batch.onCpu(i)) {
                shareOrder[candidates] = i;
                shareUnits[candidates++] = batch.cost(i);
            }
        }
        // While the threads decode whole batches, the GPU's batches give them only what nvJPEG will
        // not take: a share would only hold the GPU's batch up until its round's tail ends.
        int m = wholeInFlight > 0 ? 0 : split.share(shareUnits, candidates, units, largest, readerThreads.size());
        for (int k = 0; k < m; k++) {
            batch.leaveToCpu(shareOrder[k]);
        }
        roundImages = must + m;
        if (roundImages > 0) {
            batch.startCpu(readerThreads, hostPixels(entry), hostBytes, true);
        }
        return m;
    }

    /** The entry's host pixels, once the copies queued from them last time are done. */
    private MemorySegment hostPixels(DeviceEntry entry) {
        if (entry.hostUsed) {
            entry.done.synchronize();
            entry.hostUsed = false;
        }
        return entry.hostPixels(driver, batchSize * hostBytes);
    }

    /**
     * Reads the GPU side's time for each earlier batch whose events are done by now: never waits.
     * A batch still running when its events come round again (K + 2 batches later) goes unmeasured.
     */
    private void measureGpu() {
        for (int t = 0; t < gpuImagesTimed.length; t++) {
            if (gpuImagesTimed[t] > 0 && gpuEnd[t].isComplete()) {
                long nanos = (long) (gpuEnd[t].elapsedMillis(gpuStart[t]) * 1e6);
                split.gpuMeasured(nanos, gpuImagesTimed[t]);
                times.addAndGet(GPU_SPAN, nanos);
                times.incrementAndGet(GPU_SPAN_BATCHES);
                gpuImagesTimed[t] = 0;
            }
        }
    }

    /**
     * Decodes {@code batch}, dispatched as {@code p}, into {@code entry}'s device buffer, {@code
     * shared} of its JPEGs already started on the CPU, and starts the CPU's part of it (what nvJPEG
     * left, the host's tail). Without such a part the batch is finished here; else {@link #finishGpu}
     * finishes it once that part has ended, while this thread decodes the next batches
     * ({@link #deliver}). A batch's round ends when its slowest file does (a progressive file can
     * take a thread 25 ms), and the decode thread no longer waits for it.
     */
    private void decode(
            Pending p,
            EncodedBatch batch,
            DeviceEntry entry,
            int shared,
            GpuJpegDecoder jpeg,
            DeviceResize resize,
            EvalTableCache evalTables,
            ResampleTables[] tables,
            CropTableDraw ownDraw)
            throws InterruptedException {
        long t0 = CPU.getCurrentThreadCpuTime();
        int n = batch.size;
        if (entry.waitForRelease) {
            stream.waitFor(entry.released); // the consumer's reads of the last batch here come first
            entry.waitForRelease = false;
        }
        DeviceBuffer pixels = staged ? entry.staging : entry.out;
        Arrays.fill(entry.gpuDecoded, false);
        int[] positionOf = batch.positionOf;
        long sourceBytes = 0;
        int okImages = 0;
        for (int i = 0; i < n; i++) {
            if (batch.status[i] == SampleStatus.OK) {
                sourceBytes += batch.lengths[i];
                okImages++;
                if (batch.mustCpu(i) && !batch.onCpu(i)) {
                    // PNG, WebP, a JPEG cut short, one its reader found nvJPEG does not take (progressive
                    // on the engine, CMYK ...): the CPU decodes or names it. (With a split, share() has.)
                    batch.leaveToCpu(i);
                }
                if (!batch.onCpu(i)) {
                    batch.hand(i); // in position order: handed file j is position positionOf[j]
                }
            }
        }
        // What nvJPEG will not take starts on the CPU now, beside the batched call and the resize's
        // tables, rather than after them; the decoder takes the readers' verdicts on the rest.
        if (batch.unstarted() > 0) {
            MemorySegment host = roundImages > 0 ? entry.hostPixels(driver, batchSize * hostBytes) : hostPixels(entry);
            batch.startCpu(readerThreads, host, hostBytes, false);
        }
        int timed = split == null ? 0 : timedBatches % gpuImagesTimed.length;
        if (split != null) {
            gpuStart[timed].record(stream);
        }
        long hostStart = System.nanoTime();
        GpuJpegDecoder.Decoded decoded = jpeg.examine(batch);
        decoded = jpeg.submit(batch, stream);
        long nvjpegDone = System.nanoTime();
        resize.begin();
        int onGpu = 0;
        for (int j = 0; j < decoded.size(); j++) {
            int i = positionOf[j];
            if (!decoded.onGpu(j)) {
                if (!batch.onCpu(i)) {
                    batch.leaveToCpu(i); // nvJPEG refused the batch it was in: the CPU decodes it
                }
                continue;
            }
            ResampleTables t;
            if (train == null) {
                t = evalTables.get(decoded.width(j), decoded.height(j)); // written to the staging by add()
            } else {
                // The CPU's draw for this sample, the same box and flip from (seed, epoch, sample): its
                // reader drew it a batch ahead, unless nvJPEG decoded another size than it examined.
                t = batch.drawnTables(i, decoded.width(j), decoded.height(j));
                if (t == null) {
                    t = tables[onGpu];
                    ownDraw.draw(batch.epoch, batch.samples[i], decoded.width(j), decoded.height(j), t);
                    decodeThreadDraws.incrementAndGet();
                }
            }
            if (t.cols() != crop || t.outRows() != crop) {
                throw new IllegalStateException("the resize gives " + t.cols() + " x " + t.outRows() + ", not the "
                        + crop + " x " + crop + " crop");
            }
            resize.add(decoded, j, t, pixels, i * pixelBytes);
            entry.gpuDecoded[i] = true;
            tailWidths[i] = decoded.width(j);
            tailHeights[i] = decoded.height(j);
            onGpu++;
        }
        if (onGpu > 0) {
            resize.launch(stream);
        }
        long hostDone = System.nanoTime();
        times.addAndGet(NVJPEG, nvjpegDone - hostStart);
        times.addAndGet(RESIZE, hostDone - nvjpegDone);
        if (split != null) {
            gpuEnd[timed].record(stream);
            gpuImagesTimed[timed] = onGpu;
            timedBatches++;
            // The decode thread's own part of the GPU side, which the CPU's share runs beside.
            split.gpuHostMeasured(hostDone - hostStart, onGpu);
        }
        // The CPU's share: images nvJPEG left, decoded by the reader threads into host memory.
        List<SampleError> errors = batch.errors;
        errors.clear();
        for (int i = 0; i < n; i++) {
            if (batch.status[i] != SampleStatus.OK) {
                errors.add(new SampleError(
                        i, batch.samples[i], dataset.name(batch.samples[i]), batch.status[i], batch.messages[i]));
            }
        }
        p.entry = entry;
        p.onGpu = onGpu;
        p.shared = shared;
        p.roundImages = roundImages;
        p.sourceBytes = sourceBytes;
        p.decoded = true;
        if (okImages > 0) {
            double mean = (double) sourceBytes / okImages;
            bytesPerImage = Double.isNaN(bytesPerImage)
                    ? mean
                    : DecodeSplit.KEEP * bytesPerImage + (1 - DecodeSplit.KEEP) * mean;
        }
        if (hostTail || batch.leftoverCount() > 0 || (!errors.isEmpty() && policy == ErrorPolicy.SKIP)) {
            MemorySegment host = roundImages > 0 ? entry.hostPixels(driver, batchSize * hostBytes) : hostPixels(entry);
            batch.startCpu(readerThreads, host, hostBytes, false); // what nvJPEG left, after the share
            if (hostTail && onGpu > 0) {
                stream.synchronize(); // the decode and the resize done: the crops come back
                pixels.copyToHost(tailCrops.asSlice(0, n * pixelBytes), 0);
                batch.startTail(
                        readerThreads,
                        entry.gpuDecoded,
                        tailWidths,
                        tailHeights,
                        tailCrops,
                        pixelBytes,
                        host,
                        hostBytes);
            }
            p.cpuOpen = true;
        }
        p.decodeCpuNanos = CPU.getCurrentThreadCpuTime() - t0;
        // The CPU's part of a batch (its round, the host's tail) ends after the decode thread has
        // gone on to the next batches; it is handed out once that has ended (deliver). With the host's
        // tail it ends here: the tail reads the one crops buffer the next batch's tail fills.
        if (!p.cpuOpen || hostTail) {
            finishGpu(p);
        }
    }

    /**
     * Ends the GPU's batch {@code p}, decoded: waits for its CPU part (what nvJPEG left, the share,
     * the host's tail), copies the CPU's images into their places, zeroes what failed under
     * {@link ErrorPolicy#SKIP}, then {@link #complete}s it, or refuses it under {@link ErrorPolicy#FAIL}.
     */
    private void finishGpu(Pending p) throws InterruptedException {
        long t0 = CPU.getCurrentThreadCpuTime();
        EncodedBatch batch = files[p.slot];
        DeviceEntry entry = p.entry;
        int n = batch.size;
        DeviceBuffer pixels = staged ? entry.staging : entry.out;
        List<SampleError> errors = batch.errors; // the reads' failures, from decode()
        if (p.cpuOpen) {
            MemorySegment host = entry.hostPixels(driver, batchSize * hostBytes); // decode()'s
            long waitStart = System.nanoTime();
            batch.awaitCpu();
            times.addAndGet(WAIT_CPU, System.nanoTime() - waitStart);
            p.cpuOpen = false;
            if (split != null && p.roundImages > 0) {
                split.cpuMeasured(batch.timedRoundNanos(), p.roundImages, batch.timedBusyNanos(), batch.timedUnits());
            }
            entry.hostUsed = true;
            for (int k = 0; k < batch.leftoverCount(); k++) {
                int i = batch.leftover(k);
                if (batch.cpuStatus[k] != SampleStatus.OK) {
                    errors.add(new SampleError(
                            i,
                            batch.samples[i],
                            dataset.name(batch.samples[i]),
                            batch.cpuStatus[k],
                            batch.cpuMessages[k]));
                } else if (!hostTail) {
                    pixels.copyFromHostAsync(i * pixelBytes, host.asSlice(i * pixelBytes, pixelBytes), stream);
                }
            }
            if (policy == ErrorPolicy.SKIP) {
                for (SampleError e : errors) {
                    MemorySegment zero = host.asSlice(e.position() * hostBytes, hostBytes);
                    zero.fill((byte) 0); // 0.0 in float32 too, as the loader gives a skipped sample
                    if (!hostTail) {
                        pixels.copyFromHostAsync(e.position() * pixelBytes, zero, stream);
                    }
                }
            }
            if (hostTail) {
                // Every position's output is in host memory now (the CPU's, the device's finished, the
                // zeroed): one copy up. Under FAIL a failed position's bytes are stale, and the batch refused.
                entry.out.copyFromHostAsync(0, host.asSlice(0, n * hostBytes), stream);
            }
        }
        if (split != null) {
            balanceGpuSpan = split.spanNanosPerImage();
            balanceGpuHost = split.hostNanosPerImage();
            balanceCpu = split.cpuNanosPerImage();
            balanceCpuPerUnit = split.threadNanosPerUnit() * 1024; // a unit is a byte
        }
        gpuImages.addAndGet(p.onGpu);
        cpuImages.addAndGet(batch.leftoverCount() - p.shared);
        sharedImages.addAndGet(p.shared);
        failedImages.addAndGet(errors.size());
        // The host's cost of the batch: the readers' CPU time and the decode thread's (nvJPEG's host side).
        long cpuNanos = batch.cpuNanos() + p.decodeCpuNanos + CPU.getCurrentThreadCpuTime() - t0;
        RuntimeException rejected = complete(batch, entry, errors, p.sourceBytes, cpuNanos);
        if (rejected != null) {
            free.offer(entry);
            p.entry = null;
            p.rejected = rejected;
        }
    }

    /**
     * Ends {@code batch} in {@code entry}, its pixels queued on the stream and {@code errors} its
     * samples that failed: under {@link ErrorPolicy#FAIL}, with any, the SampleException the
     * consumer gets instead; else normalises where the device does, and sets the entry's labels,
     * indices and counts. Null when the entry holds the batch.
     */
    private RuntimeException complete(
            EncodedBatch batch, DeviceEntry entry, List<SampleError> errors, long sourceBytes, long cpuNanos) {
        int n = batch.size;
        errors.sort(BY_POSITION); // the readers' errors, then the CPU's: in position order, as a Batch's
        if (!errors.isEmpty() && policy == ErrorPolicy.FAIL) {
            entry.done.record(stream); // the next use of this host memory waits for the copies queued
            return new SampleException(batch.epoch, batch.batch, List.copyOf(errors));
        }
        if (normalizeOnDevice) {
            kernels.normalize(entry.staging, entry.out, n, crop, crop, spec.mean(), spec.std(), stream);
            // A skipped sample is 0.0 in float32, as the loader gives it, not the normalised black.
            for (SampleError e : errors) {
                entry.out.copyFromHostAsync(e.position() * pixelBytes * 4, floatZeros, stream);
            }
        }
        entry.done.record(stream);
        for (int i = 0; i < n; i++) {
            entry.labels.setAtIndex(JAVA_INT, i, dataset.label(batch.samples[i]));
            entry.indices.setAtIndex(JAVA_LONG, i, batch.samples[i]);
        }
        entry.size = n;
        entry.epoch = batch.epoch;
        entry.batchIndex = batch.batch;
        entry.lastInEpoch = batch.last;
        entry.skipped = errors.isEmpty() ? List.of() : List.copyOf(errors);
        entry.stats = new BatchStats(0, cpuNanos, sourceBytes, n * owner.sampleBytes());
        return null;
    }

    // ------------------------------------------------------------------ accessors

    /** The threads each batch's nvJPEG call is split over ({@link Builder#decodeThreads}). */
    public int decodeThreads() {
        return decodeThreads;
    }

    /** The stage's stream: decodes, resizes and normalisation run on it. */
    public CudaStream stream() {
        return stream;
    }

    /** The retained primary context (the one the CUDA runtime and PyTorch use on this device). */
    public CudaContext context() {
        return context;
    }

    /**
     * What the restart cache ({@link Builder#restartCache}) did in each epoch whose last batch has
     * been handed out, oldest first, as {@link Loader#restartCacheEpochs} says the loader's; empty
     * without one. A view, to which later epochs are added.
     */
    public List<RestartCacheEpochs.Epoch> restartCacheEpochs() {
        return cacheEpochs == null ? List.of() : cacheEpochs.epochs();
    }

    /**
     * Which of nvJPEG's decoders runs; waits for nvJPEG to open where it opens aside (under {@code
     * auto}, while the CPU threads decode the first batches whole).
     *
     * @throws IllegalStateException where nvJPEG failed to open (the stage's consumer is told too)
     */
    public GpuJpegDecoder.Backend backend() {
        try {
            return opened.join();
        } catch (CompletionException e) {
            throw new IllegalStateException(
                    "nvJPEG did not open: " + e.getCause().getMessage(), e.getCause());
        }
    }

    /**
     * Runs {@code then} with the backend once nvJPEG has opened: at once where it has, else on the
     * decode thread when it does (where it opens aside under {@code auto}); never where it fails,
     * which the stage's consumer is told instead.
     */
    public void whenOpened(Consumer<GpuJpegDecoder.Backend> then) {
        opened.thenAccept(then);
    }

    /**
     * Why the hardware engine was asked for and not used, and why nvJPEG's own RGB is used, in a
     * sentence each; null otherwise.
     */
    public String backendNote() {
        return backendNote;
    }

    /** Whether nvJPEG's planes are converted to RGB as the CPU decodes (the colour step), once nvJPEG has opened. */
    public boolean convertsColour() {
        return convertsColour;
    }

    /**
     * A host buffer of {@code bytes}, page-locked for this stage's context and freed when the stage
     * closes: where a consumer whose model runs on the host (ONNX Runtime's CPU provider, or its
     * Java API, which takes no device memory) copies each batch with {@link
     * DeviceBatch#copyToHost}, at the bus's full rate. Allocates: call once, before the loop.
     */
    public synchronized MemorySegment pinnedHostBuffer(long bytes) {
        MemorySegment buffer = hostArena.allocate(bytes, 4096);
        pinHost(buffer);
        return buffer;
    }

    /**
     * Page-locks {@code memory}, which the caller owns and keeps mapped until this stage closes (a
     * shared-memory ring's whole mapping), for this stage's context: {@link DeviceBatch#copyToHost}
     * into it then runs at the bus's full rate. Unregistered when the stage closes. Call before the loop.
     */
    public synchronized void pinHost(MemorySegment memory) {
        checkOpenAndCurrent();
        resources.keep(HostRegistration.register(driver, memory));
    }

    /**
     * {@code bytes} of device memory in this stage's context, freed when the stage closes: a ring
     * slot's pixels for a consumer in another process, which opens it by CUDA IPC
     * ({@link DeviceBuffer#ipcHandle}) and which {@link DeviceBatch#copyToDevice} fills.
     */
    public synchronized DeviceBuffer deviceBuffer(long bytes) {
        checkOpenAndCurrent();
        return resources.keep(DeviceBuffer.allocate(driver, bytes));
    }

    /** An event in this stage's context, destroyed when the stage closes. */
    public synchronized CudaEvent event() {
        checkOpenAndCurrent();
        return resources.keep(CudaEvent.create(driver));
    }

    /** For what the caller keeps until this stage closes: refused once it is closing. */
    private void checkOpenAndCurrent() {
        if (closing.get()) {
            throw new IllegalStateException("the GPU decode stage is closed");
        }
        ensureCurrent();
    }

    /** The training transform's tables the decode thread drew itself, its reader not having drawn them: for tests. */
    long decodeThreadDraws() {
        return decodeThreadDraws.get();
    }

    /** GPU batches the decode thread went on from before their CPU part had ended: for tests. */
    long wentOnBatches() {
        return wentOn.get();
    }

    /**
     * Whether the decode thread waits for an epoch's order that the {@link Builder#orderFeed order
     * feed} has not given yet, every batch before it handed out (false without a feed): the
     * consumer gives it when it starts reading that epoch.
     */
    public boolean awaitingOrder() {
        return waitingForOrder;
    }

    /**
     * Where the stage's buffers are, for a stall report: free in the pool, handed out and not yet
     * taken, and held by the consumer or still with the decode thread (decoding, or waiting for its
     * CPU part). Read from the thread-safe queues and counters only, so any thread may ask; the
     * counts are each exact but read one after another.
     */
    public String bufferState() {
        int pool = entries.length;
        int freeNow = free.size();
        int waiting = handoff.waiting();
        int held = 0;
        for (DeviceEntry e : entries) {
            if (e.handedOut != null) {
                held++;
            }
        }
        return "device buffers: " + freeNow + " free of " + pool + ", " + waiting + " handed out and not taken, "
                + held + " taken by the consumer, the rest with the decode thread; batches handed out "
                + batches.get() + ", decode thread " + decoder.getState();
    }

    /** Counters so far. */
    public GpuDecodeStats stats() {
        return new GpuDecodeStats(
                batches.get(),
                gpuImages.get(),
                cpuImages.get(),
                sharedImages.get(),
                failedImages.get(),
                new DecodeThreadTimes(
                        times.get(READS),
                        times.get(BUFFER),
                        times.get(QUEUE),
                        times.get(NVJPEG),
                        times.get(RESIZE),
                        times.get(WAIT_CPU),
                        times.get(HANDOFF),
                        times.get(GPU_SPAN),
                        times.get(GPU_SPAN_BATCHES)),
                readerClock.times(),
                new OpeningTimes(
                        opening[0], opening[1], opening[2], opening[3], opening[4], opening[5], openingBatches),
                split == null
                        ? null
                        : new GpuDecodeStats.Balance(
                                balanceGpuSpan, balanceGpuHost, balanceCpu, balanceCpuPerUnit, balanceWhole),
                wholeBatches.get(),
                behindBatches.get());
    }

    // ------------------------------------------------------------------ shutdown

    /**
     * Stops the decode thread, waits for the queued work, invalidates DeviceBatches still open, then
     * frees the device buffers, the readers and the context. Idempotent.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        closed = true;
        decoder.interrupt();
        Joins.uninterruptibly(decoder);
        OrderFeed feed = orderFeed;
        if (feed != null) {
            feed.close();
        }
        wholeQueue.stop(); // the CPU's whole batches no one waits for now
        readerThreads.close(); // after the tasks queued: a task may still read into a batch's buffers
        RuntimeException error = null;
        try {
            ensureCurrent();
            stream.synchronize();
        } catch (RuntimeException e) {
            error = e; // the device may still read the host buffers: keep them (a leak, not a crash)
        }
        for (DeviceEntry e : entries) {
            DeviceBatch held = e.handedOut;
            if (held != null) {
                held.invalidate();
            }
            if (error == null) {
                e.closeHost();
            }
        }
        if (error == null) {
            closeFiles();
        }
        synchronized (this) { // against pinnedHostBuffer, the one other writer of resources
            error = resources.closeAll(error);
        }
        if (error != null) {
            throw error;
        }
    }

    private void closeFiles() {
        for (EncodedBatch f : files) {
            if (f != null) {
                f.close();
            }
        }
        if (wholeFiles == null) {
            return; // the constructor failed before the pool was laid out
        }
        for (EncodedBatch f : wholeFiles) { // never read: nothing to free, but closed as the rest
            if (f != null) {
                f.close();
            }
        }
    }

    /** Options for a {@link GpuDecodeStage}. */
    public static final class Builder extends DeviceOptions<Builder> {
        private final Dataset dataset;
        private final Sampler sampler;
        private final TransformSpec spec;
        private Nvjpeg nvjpeg;
        private boolean preferHardware = true;
        private boolean shareWithCpu;
        private int cpuBatches = 3;
        private int decodeThreads = 1;
        private boolean wholeEveryOther;
        private boolean consumerOnGpu;
        private UnaryOperator<SampleReader> readerWrap = UnaryOperator.identity();
        private boolean readersDraw = true;
        private int readers = Math.min(8, Runtime.getRuntime().availableProcessors());
        private long epochs = 1;
        private long startEpoch;
        private int startBatch;
        private ErrorPolicy policy = ErrorPolicy.FAIL;
        private Path orderFeed;
        private OrderFeed.GivenEpoch resumedOrder;
        private RestartCache restartCache;

        private Builder(Dataset dataset, Sampler sampler, TransformSpec spec) {
            this.dataset = dataset;
            this.sampler = sampler;
            this.spec = spec;
        }

        @Override
        Builder self() {
            return this;
        }

        /** CPU threads that read files and decode what nvJPEG leaves (default: the cores, at most 8). */
        public Builder readers(int readers) {
            if (readers < 1 || readers > 256) {
                throw new IllegalArgumentException("readers must be in [1, 256]: " + readers);
            }
            this.readers = readers;
            return this;
        }

        /** The nvJPEG library ({@link NvjpegLibrary#load()} finds it). */
        public Builder nvjpeg(Nvjpeg nvjpeg) {
            this.nvjpeg = nvjpeg;
            return this;
        }

        /** Whether to ask for the hardware JPEG engine first (default true; without one, the GPU hybrid decoder). */
        public Builder preferHardware(boolean preferHardware) {
            this.preferHardware = preferHardware;
            return this;
        }

        /**
         * Whether the CPU threads also decode a share of the JPEGs, balanced live from both sides'
         * measured rates so that they finish each batch together (default false: nvJPEG takes every
         * JPEG it can). The order, labels, crops and flips are the same either way; a sample's pixels
         * then come from either decoder, which differ by their IDCTs.
         */
        public Builder shareWithCpu(boolean share) {
            this.shareWithCpu = share;
            return this;
        }

        /**
         * Device buffers beside the {@link #inFlight} K for batches the CPU threads still work on
         * (default 3): the GPU's batches whose CPU round (what nvJPEG leaves, the share) still runs
         * while the decode thread goes on, and with {@link #shareWithCpu} whole batches the CPU
         * decodes in the background, at most this many of those at once (0: the pool is the K alone,
         * and no batch goes whole). A batch goes whole to the CPU
         * when the measured rates say it ends before the GPU runs out of free buffers for the batches
         * after it ({@link DecodeSplit#whole}).
         */
        public Builder cpuBatches(int n) {
            if (n < 0 || n > 16) {
                throw new IllegalArgumentException("cpuBatches must be in [0, 16]: " + n);
            }
            this.cpuBatches = n;
            return this;
        }

        /**
         * Threads that call nvJPEG's batched decoder on each batch, each on a part of it with a state
         * and a stream of its own (default 1: the decode thread alone; {@link GpuJpegDecoder#open(
         * io.stoke.ffm.cuda.CudaContext, Nvjpeg, boolean, int, long, int)}). The batched call's host
         * side took 39 us an image on an H200's engine (run-4), on the decode thread: split, it runs
         * on that many cores at once. Not yet measured on a GPU.
         */
        public Builder decodeThreads(int n) {
            if (n < 1 || n > GpuJpegDecoder.MAX_PARTS) {
                throw new IllegalArgumentException(
                        "decodeThreads must be in [1, " + GpuJpegDecoder.MAX_PARTS + "]: " + n);
            }
            this.decodeThreads = n;
            return this;
        }

        /**
         * Whether the consumer's own work runs on this GPU (a model reading the batches there; default
         * false). Then, with {@link #shareWithCpu}, while batches wait for the consumer the next ones
         * go whole to the CPU threads and the GPU is left to the consumer; a consumer on the CPU is
         * left the cores.
         */
        public Builder consumerOnGpu(boolean onGpu) {
            this.consumerOnGpu = onGpu;
            return this;
        }

        /** For tests of the wiring: with {@link #shareWithCpu}, every other batch goes whole to the CPU. */
        Builder wholeEveryOther() {
            this.wholeEveryOther = true;
            return this;
        }

        /**
         * For tests: each reader thread's reader of the GPU's batches is {@code wrap} of its own (one
         * that holds a read back); the CPU's whole batches read through their transforms.
         */
        Builder readerWrap(UnaryOperator<SampleReader> wrap) {
            this.readerWrap = wrap;
            return this;
        }

        /** For tests: the decode thread draws every training resize table, as it did before 2026-12-03. */
        Builder decodeThreadDraws() {
            this.readersDraw = false;
            return this;
        }

        /** Epochs to run from the first (default 1); 0 runs until closed. */
        public Builder epochs(long epochs) {
            if (epochs < 0) {
                throw new IllegalArgumentException("epochs must not be negative, not " + epochs);
            }
            this.epochs = epochs;
            return this;
        }

        /** The first epoch, unless the sampler resumes one (default 0). */
        public Builder startEpoch(long startEpoch) {
            if (startEpoch < 0) {
                throw new IllegalArgumentException("the start epoch must not be negative, not " + startEpoch);
            }
            this.startEpoch = startEpoch;
            return this;
        }

        /** The first epoch's first batch (default 0): the batches before it were delivered before. */
        public Builder startBatch(int startBatch) {
            if (startBatch < 0) {
                throw new IllegalArgumentException("the start batch must not be negative, not " + startBatch);
            }
            this.startBatch = startBatch;
            return this;
        }

        /** What a sample that cannot be decoded does to its batch (default {@link ErrorPolicy#FAIL}). */
        public Builder onError(ErrorPolicy policy) {
            this.policy = policy;
            return this;
        }

        /**
         * Takes each epoch's order as given at {@code feed} ({@link OrderFeed}: a Python sampler's, one
         * record an epoch from the start epoch), as {@link Loader.Builder#orderFeed} does: the batches
         * and their boundaries are the feed's, and the stage hands out every batch of the epochs given
         * before it waits for the next epoch's order. The stage opens the feed and closes it.
         *
         * @param resumed the order a resumed epoch was given, which the feed must give again as it
         *     was ({@link Loader.Builder#resumedOrder}), or null
         */
        public Builder orderFeed(Path feed, OrderFeed.GivenEpoch resumed) {
            this.orderFeed = feed;
            this.resumedOrder = resumed;
            return this;
        }

        /**
         * Reads the dataset through {@code cache} ({@link Loader.Builder#restartCache}; null, the
         * default: the originals), which the caller opens and closes. nvJPEG is given each
         * original's sequential copy where the cache holds one: its coefficients are the original's,
         * so its pixels are too, and a progressive original's copy is one the hardware engine takes
         * (else the CPU decodes it). The CPU's decodes seek in the copies as the loader's workers
         * do. The cache fills from the reader threads' idle time ({@link RestartCache#pace}): each
         * miss is asked of the cache's fillers, which take only the cores the threads leave. A
         * reader thread never copies a miss as it decodes it, as the loader's workers may: its CPU
         * round may be what a batch waits for.
         * {@link GpuDecodeStage#restartCacheEpochs} says what it did in each epoch.
         */
        public Builder restartCache(RestartCache cache) {
            this.restartCache = cache;
            return this;
        }

        /**
         * Opens the stage.
         *
         * @throws IllegalArgumentException for a transform it cannot run ({@link #refusal})
         * @throws DeviceUnavailableException when there is no CUDA driver or no device
         * @throws io.stoke.ffm.cuda.CudaException when the driver refuses a call (the message names it)
         */
        public GpuDecodeStage build() {
            return new GpuDecodeStage(this);
        }
    }
}
