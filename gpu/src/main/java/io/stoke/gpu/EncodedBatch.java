package io.stoke.gpu;

import io.stoke.loader.decode.SampleTransform;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.source.SampleReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One batch's files as read, for {@link GpuDecodeStage}: the bytes of each position's file in a
 * buffer of its own, and what the CPU made of those nvJPEG left.
 *
 * <p>Owners: between {@link #begin} and {@link #readsDone}, each reader thread claims the batch's
 * next unread position in turn, up to twice its share, and writes the positions it claimed only,
 * end to end into a buffer of its own; after it, the decode thread reads them (each position's
 * count down orders its writes before). A thread still busy with an earlier task (a progressive
 * file of the last round) holds up no position of this batch while half the threads are free: they
 * read them all. A reader's buffer
 * grows (doubling) to hold the largest run of files it has read for one batch, and is reused after:
 * the memory is a few batches' worth of compressed files (up to twice that, where threads read
 * for busy ones), not a largest file per position.
 *
 * <p>A whole batch of the CPU's ({@link #startWhole}) is never read here: the reader threads read and
 * decode each position with their own transform, as the loader does, one image per
 * {@link #stepWhole}; the decode thread waits with {@link #awaitWhole}.
 */
final class EncodedBatch implements GpuJpegDecoder.Files, AutoCloseable {
    /** The reader threads' CPU time: what a batch cost the host, not the wall time it took. */
    private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

    final int[] samples;
    private final Arena[] arenas; // per reader
    private final MemorySegment[] buffers; // per reader: its positions' files, end to end
    private final long[] offsets; // per position: where its file starts in its reader's buffer
    private final int[] readerOf; // per position: the reader whose buffer holds its file
    final long[] lengths;
    /**
     * Per position: read, a JPEG by its content, and whole ({@link JpegEnd}): nvJPEG may take it, or
     * the CPU's share; any other file goes to the CPU.
     */
    final boolean[] jpeg;

    final SampleStatus[] status;
    final String[] messages;
    /**
     * Per JPEG position ({@link #jpeg}), what its reader's examination for nvJPEG said: why nvJPEG is
     * not given it (null where it is), and its size.
     */
    private final String[] gpuWhy;

    private final int[] gpuWidth;
    private final int[] gpuHeight;
    private final int[] gpuCss;
    /**
     * Per JPEG position nvJPEG is given, under the training transform: the resize tables its reader
     * drew for the size it examined (where {@link #tablesDrawn}), made on first use and re-filled.
     */
    private final ResampleTables[] tables;

    private final boolean[] tablesDrawn;
    /**
     * The files handed to nvJPEG, in position order: file j ({@link #address}, {@link #length}) is
     * position {@code positionOf[j]}'s, for j below {@link #count}.
     */
    final int[] positionOf;

    private int handed;
    private final int[] leftovers;
    private int leftoverCount;
    final SampleStatus[] cpuStatus;
    final String[] cpuMessages;
    private final Future<?>[] pending;
    /** The last {@link #startReads}' claims: the decode thread's field, its tasks' shared counts. */
    private Reads reads;
    /** The samples that produced no pixels, once decoded: the decode thread's. */
    final List<SampleError> errors = new ArrayList<>();

    private final boolean[] onCpu;
    /** A round's positions keyed by their estimated cost, to start the costliest first (startCpu). */
    private final long[] byCost;

    private final long[] costOf;

    private final List<Future<?>> cpuPending;
    private final AtomicLong timedEnd = new AtomicLong();
    private final AtomicLong timedBusy = new AtomicLong();
    private long timedUnits;
    private long timedStart;
    private int cpuStarted;
    private final AtomicLong cpuNanos = new AtomicLong();
    // A whole batch of the CPU's: where its pixels go, the next position to claim, how many are not
    // yet done (its decrement orders each position's results before the decode thread's reads), and
    // a task's unexpected failure.
    private MemorySegment wholeHost;
    private long wholeSampleBytes;
    private final AtomicInteger wholeNext = new AtomicInteger();
    private final AtomicInteger wholeLeft = new AtomicInteger();
    private final AtomicLong wholeSourceBytes = new AtomicLong();
    private volatile Throwable wholeFailure;
    private long wholeStart;
    long epoch;
    int batch;
    int size;
    boolean last;

    /** Rung when a whole batch's last image ends (the decode thread may be waiting on it for another batch's reads). */
    private final Doorbell wholeEnded;

    EncodedBatch(int batchSize, int readers, Doorbell wholeEnded) {
        this.wholeEnded = wholeEnded;
        samples = new int[batchSize];
        arenas = new Arena[readers];
        buffers = new MemorySegment[readers];
        offsets = new long[batchSize];
        readerOf = new int[batchSize];
        jpeg = new boolean[batchSize];
        lengths = new long[batchSize];
        status = new SampleStatus[batchSize];
        messages = new String[batchSize];
        gpuWhy = new String[batchSize];
        gpuWidth = new int[batchSize];
        gpuHeight = new int[batchSize];
        gpuCss = new int[batchSize];
        tables = new ResampleTables[batchSize];
        tablesDrawn = new boolean[batchSize];
        positionOf = new int[batchSize];
        leftovers = new int[batchSize];
        cpuStatus = new SampleStatus[batchSize];
        cpuMessages = new String[batchSize];
        pending = new Future<?>[readers];
        onCpu = new boolean[batchSize];
        byCost = new long[batchSize];
        costOf = new long[batchSize];
        cpuPending = new ArrayList<>(2 * readers);
    }

    /** Starts batch {@code batch} of {@code epoch}: {@code order[from, from + size)} are its samples. */
    void begin(long epoch, int batch, int[] order, int from, int size, boolean last) {
        this.epoch = epoch;
        this.batch = batch;
        this.size = size;
        this.last = last;
        System.arraycopy(order, from, samples, 0, size);
        leftoverCount = 0;
        handed = 0;
        cpuStarted = 0;
        Arrays.fill(onCpu, false);
        cpuNanos.set(0);
    }

    /**
     * One {@link #startReads}: the next position to claim, how many are still to read (its
     * decrement, after a position's writes, orders them before the decode thread's reads), and a
     * reader's unexpected failure. A task that starts after the batch was read, on a thread that was
     * busy, finds nothing to claim in its own and touches nothing, even once the batch is reused.
     */
    private static final class Reads {
        final int size;
        /**
         * The most files one task claims: twice its stripe, so that half the threads read the whole
         * batch while the rest are busy, and a reader's buffer holds at most twice its share.
         */
        final int perTask;

        final AtomicInteger next = new AtomicInteger();
        final AtomicInteger left;
        volatile Throwable failure;

        Reads(int size, int readers) {
            this.size = size;
            this.perTask = 2 * ((size + readers - 1) / readers);
            this.left = new AtomicInteger(size);
        }
    }

    /**
     * Reads every position of this batch on {@code threads}: each reader {@code r} claims the next
     * unread position until none is left, and examines each JPEG it read for nvJPEG with
     * {@code examiners[r]}, so that the decode thread does not.
     */
    void startReads(
            ReaderThreads threads, GpuJpegDecoder.Examiner[] examiners, CropTableDraw[] draws, ReaderClock clock) {
        if (examiners.length != threads.size() || (draws != null && draws.length != threads.size())) {
            throw new IllegalArgumentException(examiners.length + " examiners and "
                    + (draws == null ? "no" : String.valueOf(draws.length)) + " table draws for " + threads.size()
                    + " readers");
        }
        Reads claims = new Reads(size, threads.size());
        reads = claims;
        for (int r = 0; r < threads.size(); r++) {
            int reader = r;
            GpuJpegDecoder.Examiner examiner = examiners[r];
            CropTableDraw draw = draws == null ? null : draws[r];
            pending[r] = threads.submit(r, (own, unused) -> readClaimed(claims, reader, own, examiner, draw, clock));
        }
    }

    private void readClaimed(
            Reads claims,
            int r,
            SampleReader reader,
            GpuJpegDecoder.Examiner examiner,
            CropTableDraw draw,
            ReaderClock clock) {
        int i = claims.next.getAndIncrement();
        if (i >= claims.size) {
            return; // the other threads read the batch while this one was busy: nothing of it is this task's
        }
        long t0 = CPU.getCurrentThreadCpuTime();
        long used = 0;
        long files = 0;
        long examining = 0;
        long drawing = 0;
        long start = System.nanoTime(); // wall time: a read's waits count, and nanoTime costs little a file
        try {
            while (true) {
                readerOf[i] = r;
                tablesDrawn[i] = false;
                SampleStatus s = reader.read(samples[i]);
                try {
                    if (s == SampleStatus.OK) {
                        long n = reader.length();
                        room(r, used, used + n);
                        MemorySegment.copy(reader.bytes(), 0, buffers[r], used, n);
                        offsets[i] = used;
                        lengths[i] = n;
                        used += n;
                        // Sniffed here, on the reader's own bytes: the split asks per batch, with no slice per file.
                        // A JPEG cut short counts as no JPEG: the CPU decodes or names it (JpegEnd).
                        jpeg[i] = ImageFormat.sniff(reader.bytes(), n) == ImageFormat.JPEG
                                && JpegEnd.complete(reader.bytes(), n);
                        messages[i] = null;
                        if (jpeg[i]) {
                            // The copy nvJPEG will be handed, before the next file can move the buffer.
                            long e0 = System.nanoTime();
                            gpuWhy[i] = examiner.examine(buffers[r].address() + offsets[i], n);
                            gpuWidth[i] = gpuWhy[i] == null ? examiner.width() : 0;
                            gpuHeight[i] = gpuWhy[i] == null ? examiner.height() : 0;
                            gpuCss[i] = gpuWhy[i] == null ? examiner.subsampling() : 0;
                            long e1 = System.nanoTime();
                            examining += e1 - e0;
                            if (draw != null && gpuWhy[i] == null) {
                                // The decode thread's own work otherwise, one image at a time: here a batch ahead.
                                if (tables[i] == null) {
                                    tables[i] = new ResampleTables();
                                }
                                draw.draw(epoch, samples[i], gpuWidth[i], gpuHeight[i], tables[i]);
                                tablesDrawn[i] = true;
                                drawing += System.nanoTime() - e1;
                            }
                        }
                    } else {
                        jpeg[i] = false;
                        messages[i] = reader.message() != null ? reader.message() : s.description();
                    }
                    status[i] = s;
                } finally {
                    reader.done();
                }
                claims.left.decrementAndGet(); // after position i's writes: the decode thread may read them now
                if (++files == claims.perTask || (i = claims.next.getAndIncrement()) >= claims.size) {
                    break;
                }
            }
        } catch (RuntimeException | Error e) {
            claims.failure = e; // before the task ends, whose end rings the decode thread
            throw e;
        }
        clock.add(files, System.nanoTime() - start - examining - drawing, examining, drawing);
        cpuNanos.addAndGet(CPU.getCurrentThreadCpuTime() - t0);
    }

    /** Makes reader {@code r}'s buffer hold {@code bytes}, keeping its first {@code used}. */
    private void room(int r, long used, long bytes) {
        MemorySegment old = buffers[r];
        if (old != null && old.byteSize() >= bytes) {
            return;
        }
        Arena arena = Arena.ofShared();
        MemorySegment grown = arena.allocate(Math.max(bytes, old == null ? 0 : 2 * old.byteSize()), 64);
        if (old != null) {
            MemorySegment.copy(old, 0, grown, 0, used);
            arenas[r].close();
        }
        arenas[r] = arena;
        buffers[r] = grown;
    }

    /** Hands position {@code i}'s file as read (its status OK) to nvJPEG, after {@link #readsDone}. */
    void hand(int i) {
        positionOf[handed++] = i;
    }

    /** How many files are handed to nvJPEG. */
    @Override
    public int count() {
        return handed;
    }

    /** Where handed file {@code j} starts, in its reader's buffer. */
    @Override
    public long address(int j) {
        int i = positionOf[j];
        return buffers[readerOf[i]].address() + offsets[i];
    }

    @Override
    public long length(int j) {
        return lengths[positionOf[j]];
    }

    @Override
    public boolean examined() {
        return true; // by the readers, every file handed
    }

    @Override
    public String why(int j) {
        return gpuWhy[positionOf[j]];
    }

    @Override
    public int width(int j) {
        return gpuWidth[positionOf[j]];
    }

    @Override
    public int height(int j) {
        return gpuHeight[positionOf[j]];
    }

    @Override
    public int subsampling(int j) {
        return gpuCss[positionOf[j]];
    }

    /**
     * Waits for {@link #startReads}' tasks, whatever they gave, and keeps an interrupt for after: the
     * decode thread's last step before it closes the examiners they may be using.
     */
    void drainReads() {
        boolean interrupted = false;
        for (int r = 0; r < pending.length; r++) {
            Future<?> f = pending[r];
            while (f != null) {
                try {
                    f.get();
                    f = null;
                } catch (ExecutionException e) {
                    f = null; // its failure is the batch's, which no one waits for now
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            pending[r] = null;
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Whether every position of the last {@link #startReads} is read, or a reader failed (which
     * {@link #checkReads} then throws). A task may still be queued behind a busy thread's work, with
     * nothing left to claim ({@link #drainReads} waits for it).
     */
    boolean readsDone() {
        Reads claims = reads;
        return claims == null || claims.left.get() == 0 || claims.failure != null;
    }

    /**
     * Position {@code i}'s training resize tables as its reader drew them, where it drew them for an
     * image of {@code width x height} (what nvJPEG decoded); else null, and the caller draws them.
     * After {@link #readsDone}.
     */
    ResampleTables drawnTables(int i, int width, int height) {
        return tablesDrawn[i] && gpuWidth[i] == width && gpuHeight[i] == height ? tables[i] : null;
    }

    /**
     * Once {@link #readsDone}: throws a reader's unexpected failure, if one failed. The tasks
     * themselves may end later.
     */
    void checkReads() {
        Reads claims = reads;
        if (claims == null) {
            return;
        }
        Throwable failure = claims.failure;
        if (failure instanceof Error e) {
            throw e;
        }
        if (failure != null) {
            throw failure instanceof RuntimeException re
                    ? re
                    : new IllegalStateException("a GPU decode reader failed", failure);
        }
        if (claims.left.get() != 0) {
            throw new IllegalStateException(claims.left.get() + " files of the batch are still being read");
        }
    }

    private static void get(Future<?> f) throws InterruptedException {
        try {
            f.get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException re
                    ? re
                    : new IllegalStateException("a GPU decode reader failed", e.getCause());
        }
    }

    /** Position {@code i} goes to the CPU: nvJPEG left it, or the split gave it to the CPU. */
    void leaveToCpu(int i) {
        leftovers[leftoverCount++] = i;
        onCpu[i] = true;
    }

    /** Whether position {@code i} goes to the CPU. */
    boolean onCpu(int i) {
        return onCpu[i];
    }

    /**
     * Whether position {@code i}, read, goes to the CPU whatever the split: no JPEG, a JPEG cut
     * short, or one its reader's examination found nvJPEG does not take (on the hardware engine,
     * progressive ones). After {@link #readsDone}.
     */
    boolean mustCpu(int i) {
        return status[i] == SampleStatus.OK && (!jpeg[i] || gpuWhy[i] != null);
    }

    /**
     * What position {@code i} is expected to cost the CPU, in baseline-JPEG bytes: its length, three
     * times over for a JPEG nvJPEG's examination refused (mostly progressive files on the hardware
     * engine, which cost libjpeg-turbo 3.1 times as much a byte on ImageNet-like photographs:
     * benchmarks/gpu/split-rounds).
     */
    long cost(int i) {
        return jpeg[i] && gpuWhy[i] != null ? 3 * lengths[i] : lengths[i];
    }

    /**
     * Orders leftovers {@code [from, to)} costliest first. A round ends when its last image does: the
     * threads take the next image when free, so a slow file taken last holds the whole round up,
     * while short files taken last fill the threads' ends (longest-processing-time-first order).
     */
    private long costliestFirst(int from, int to) {
        long units = 0;
        for (int k = from; k < to; k++) {
            costOf[leftovers[k]] = cost(leftovers[k]);
            units += costOf[leftovers[k]];
        }
        costliestFirst(leftovers, from, to, costOf, byCost);
        return units;
    }

    /**
     * Orders {@code positions[from, to)} by {@code cost[position]}, costliest first, the later
     * position first between equals; {@code scratch} holds at least {@code to - from} longs. Positions
     * are below 65,536 (DeviceResize's bound on a batch).
     */
    static void costliestFirst(int[] positions, int from, int to, long[] cost, long[] scratch) {
        int n = to - from;
        for (int k = 0; k < n; k++) {
            int i = positions[from + k];
            scratch[k] = (Math.min(Math.max(cost[i], 0), (1L << 47) - 1) << 16) | i;
        }
        Arrays.sort(scratch, 0, n);
        for (int k = 0; k < n; k++) {
            positions[from + k] = (int) (scratch[n - 1 - k] & 0xFFFF);
        }
    }

    int leftoverCount() {
        return leftoverCount;
    }

    /** Leftovers not yet started ({@link #startCpu} starts them). */
    int unstarted() {
        return leftoverCount - cpuStarted;
    }

    int leftover(int k) {
        return leftovers[k];
    }

    /**
     * Starts decoding, on {@code threads}, the positions left to the CPU since the last call, each
     * with its thread's own transform, into {@code host} at {@code position * sampleBytes}.
     * {@link #cpuStatus}[k] and {@link #cpuMessages}[k] say how leftover k went, after
     * {@link #awaitCpu}. With {@code timed}, this round's wall time is {@link #timedRoundNanos()}.
     */
    void startCpu(ReaderThreads threads, MemorySegment host, long sampleBytes, boolean timed) {
        int from = cpuStarted;
        int to = leftoverCount;
        cpuStarted = to;
        long units = costliestFirst(from, to);
        int n = threads.size();
        if (timed) {
            timedUnits = units;
            timedBusy.set(0);
            timedStart = System.nanoTime();
            timedEnd.set(timedStart);
        }
        // Each task takes the round's next leftover until none is left, rather than every n-th: a
        // thread that starts late (busy, or descheduled) or draws the slow files (progressive, large)
        // holds up the round by one image, not by its whole stripe.
        AtomicInteger next = new AtomicInteger(from);
        for (int r = 0; r < n && from + r < to; r++) {
            cpuPending.add(threads.submitFirst(r, (unused, transform) -> {
                long t0 = CPU.getCurrentThreadCpuTime();
                long start = System.nanoTime();
                for (int k; (k = next.getAndIncrement()) < to; ) {
                    int i = leftovers[k];
                    cpuStatus[k] = transform.apply(samples[i], epoch, host, i * sampleBytes);
                    cpuMessages[k] = transform.message();
                }
                cpuNanos.addAndGet(CPU.getCurrentThreadCpuTime() - t0);
                if (timed) {
                    long end = System.nanoTime();
                    timedBusy.addAndGet(end - start);
                    timedEnd.accumulateAndGet(end, Math::max);
                }
            }));
        }
    }

    /**
     * Starts, on {@code threads}, the rest of the transform ({@link SampleTransform#finish}: the
     * augmentation policy, the output's conversion, random erasing) for each position {@code i} with
     * {@code tail[i]}, whose crop the device decoded and resized: from {@code crops} at
     * {@code i * cropBytes}, for an image of {@code widths[i] x heights[i]}, into {@code host} at
     * {@code i * sampleBytes}. Awaited with {@link #awaitCpu}, as the CPU's decodes are.
     */
    void startTail(
            ReaderThreads threads,
            boolean[] tail,
            int[] widths,
            int[] heights,
            MemorySegment crops,
            long cropBytes,
            MemorySegment host,
            long sampleBytes) {
        int n = threads.size();
        for (int r = 0; r < n; r++) {
            int reader = r;
            cpuPending.add(threads.submitFirst(r, (unused, transform) -> {
                long t0 = CPU.getCurrentThreadCpuTime();
                for (int i = 0, k = 0; i < size; i++) {
                    if (tail[i] && k++ % n == reader) {
                        transform.finish(
                                samples[i], epoch, widths[i], heights[i], crops, i * cropBytes, host, i * sampleBytes);
                    }
                }
                cpuNanos.addAndGet(CPU.getCurrentThreadCpuTime() - t0);
            }));
        }
    }

    /** Whether every CPU decode started has ended: then {@link #awaitCpu} returns at once. */
    boolean cpuDone() {
        for (Future<?> f : cpuPending) {
            if (!f.isDone()) {
                return false;
            }
        }
        return true;
    }

    /** Waits for every CPU decode started; a task's unexpected failure is thrown here. */
    void awaitCpu() throws InterruptedException {
        try {
            for (Future<?> f : cpuPending) {
                get(f);
            }
        } finally {
            cpuPending.clear();
        }
    }

    /**
     * Starts this batch, begun and never read, as a whole batch of the CPU's: every position goes to
     * the reader threads' transform, into {@code host} at {@code position * sampleBytes}, one image at
     * a time as they take {@link #stepWhole} (a {@link WholeBatchQueue} gives them the step).
     */
    void startWhole(MemorySegment host, long sampleBytes) {
        for (int i = 0; i < size; i++) {
            status[i] = SampleStatus.OK; // as read: the transform reads, and says how it went in cpuStatus
            jpeg[i] = false;
            lengths[i] = 0;
            messages[i] = null;
            leaveToCpu(i);
        }
        cpuStarted = size;
        wholeHost = host;
        wholeSampleBytes = sampleBytes;
        wholeFailure = null;
        wholeSourceBytes.set(0);
        wholeStart = System.nanoTime();
        timedEnd.set(wholeStart);
        // The count first, then the claims open: a thread still stepping the batch's last use claims
        // nothing before this, and every claim after it is counted down from the new size.
        wholeLeft.set(size);
        wholeNext.set(0);
    }

    /** Whether every position of the whole batch has been claimed. */
    boolean wholeClaimed() {
        return wholeNext.get() >= size;
    }

    /**
     * Decodes the next unclaimed position of a whole batch with {@code transform}, on a reader thread;
     * false when every position is claimed.
     */
    boolean stepWhole(SampleTransform transform) {
        int k = wholeNext.getAndIncrement();
        if (k >= size) {
            return false;
        }
        long t0 = CPU.getCurrentThreadCpuTime();
        try {
            cpuStatus[k] = transform.apply(samples[k], epoch, wholeHost, k * wholeSampleBytes);
            cpuMessages[k] = transform.message();
            if (cpuStatus[k] == SampleStatus.OK) {
                wholeSourceBytes.addAndGet(transform.lastSourceBytes());
            }
        } catch (RuntimeException | Error e) {
            cpuStatus[k] = SampleStatus.CORRUPT; // unread: awaitWhole throws the failure itself
            cpuMessages[k] = String.valueOf(e);
            wholeFailure = e;
        } finally {
            cpuNanos.addAndGet(CPU.getCurrentThreadCpuTime() - t0);
            timedEnd.accumulateAndGet(System.nanoTime(), Math::max);
            if (wholeLeft.decrementAndGet() == 0) {
                synchronized (this) {
                    notifyAll();
                }
                wholeEnded.ring(); // once a batch, not once an image: the decode thread wakes when it can hand one out
            }
        }
        return true;
    }

    /** Positions of the whole batch not yet done. */
    int wholeLeft() {
        return wholeLeft.get();
    }

    /** Whether every position of the whole batch is done: then {@link #awaitWhole} returns at once. */
    boolean wholeDone() {
        return wholeLeft.get() == 0;
    }

    /** Waits for every position of the whole batch; a task's unexpected failure is thrown here. */
    void awaitWhole() throws InterruptedException {
        synchronized (this) {
            while (wholeLeft.get() > 0) {
                wait();
            }
        }
        Throwable e = wholeFailure;
        if (e != null) {
            throw e instanceof RuntimeException re ? re : new IllegalStateException("a GPU decode reader failed", e);
        }
    }

    /** When the whole batch was started, and when its last image ended (after {@link #awaitWhole}). */
    long wholeStartNanos() {
        return wholeStart;
    }

    long wholeEndNanos() {
        return timedEnd.get();
    }

    /** The bytes the whole batch's transforms read, over the positions that decoded. */
    long wholeSourceBytes() {
        return wholeSourceBytes.get();
    }

    /** Wall time of the round started with {@code timed}, once awaited: start to its last task's end. */
    long timedRoundNanos() {
        return timedEnd.get() - timedStart;
    }

    /** The threads' busy time in that round, once awaited: each task's own start to end, summed. */
    long timedBusyNanos() {
        return timedBusy.get();
    }

    /** That round's estimated cost ({@link #cost}), summed. */
    long timedUnits() {
        return timedUnits;
    }

    /** CPU time the reader threads spent on this batch, summed over threads. */
    long cpuNanos() {
        return cpuNanos.get();
    }

    /** Frees the file buffers; the reader threads must be done. */
    @Override
    public void close() {
        for (int r = 0; r < arenas.length; r++) {
            if (arenas[r] != null) {
                arenas[r].close();
                arenas[r] = null;
                buffers[r] = null;
            }
        }
    }
}
