package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.testing.BadImages;
import io.stoke.loader.testing.OrderFeedRecords;
import io.stoke.loader.transform.RandomErasing;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.awt.image.BufferedImage;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;

/**
 * The GPU decode stage on the nvJPEG and CUDA test doubles: the loader's order, labels and indices,
 * each sample's pixels at its position (nvJPEG's share and the CPU's), errors by policy, epochs and
 * lifetimes, against the host loader on the same files. The double decodes with libjpeg at full size,
 * so against the host loader with {@code DctScaling.NONE} every difference is a wiring fault (a wrong
 * file, position, size or table). This is not a GPU verification: nvJPEG's own pixels are checked on
 * a device (docs/gpu.md).
 */
class GpuDecodeStageTest extends StageOnDoubles {
    /** Full-size decodes on both sides, so the double's pixels are the host loader's. */
    static final TransformSpec EVAL =
            TransformSpec.defaults().withResize(24, 16).withDctScaling(TransformSpec.DctScaling.NONE);

    /** A host batch, copied out of its slot. */
    record Snapshot(
            int size, long epoch, long batchIndex, boolean lastInEpoch, long[] indices, int[] labels, byte[] pixels) {}

    /** Every batch of the host loader over {@code settings}: pixels, labels, indices. */
    static List<Snapshot> host(Loader.Builder settings) {
        List<Snapshot> out = new ArrayList<>();
        try (Loader loader = settings.build()) {
            for (Batch b : loader) {
                try (b) {
                    out.add(snapshot(b));
                }
            }
        }
        return out;
    }

    /** The first {@code n} batches of the host loader over {@code settings}. */
    static List<Snapshot> hostTake(Loader.Builder settings, int n) {
        List<Snapshot> out = new ArrayList<>();
        try (Loader loader = settings.build()) {
            for (int k = 0; k < n; k++) {
                try (Batch b = loader.next()) {
                    out.add(snapshot(b));
                }
            }
        }
        return out;
    }

    static Snapshot snapshot(Batch b) {
        long[] indices = new long[b.size()];
        int[] labels = new int[b.size()];
        for (int i = 0; i < b.size(); i++) {
            indices[i] = b.index(i);
            labels[i] = b.label(i);
        }
        return new Snapshot(
                b.size(),
                b.epoch(),
                b.batchIndex(),
                b.lastInEpoch(),
                indices,
                labels,
                b.pixels().toArray(JAVA_BYTE));
    }

    @Test
    void batchesEqualTheHostLoadersInItsOrderWithTheCpuTakingWhatNvjpegLeaves() throws Exception {
        writeDataset(root, 13);
        // Per epoch: 10 baseline JPEGs on the GPU; the progressive JPEG, the PNG and the CMYK JPEG on the CPU.
        GpuDecodeStats s = assertEqualsTheHostLoader(EVAL, 20, 6);
        assertEquals(2 * 13, s.readers().images(), s.toString());
        assertEquals(0, s.readers().tables(), "no training tables under the evaluation transform: " + s);
        // Every phase of the opening was timed, the constructor's and the decode thread's.
        OpeningTimes o = s.opening();
        for (long phase : new long[] {o.context(), o.kernels(), o.buffers(), o.nvjpeg(), o.examiners(), o.resize()}) {
            assertTrue(phase > 0, "each phase of the opening timed: " + o);
        }
        assertEquals(o.context() + o.kernels() + o.buffers() + o.nvjpeg() + o.examiners() + o.resize(), o.total());
    }

    /**
     * Each GPU image's box and flip are the CPU's draw for its sample and epoch; the readers draw
     * their tables a batch ahead, and the decode thread none, or, with them drawing none, it draws
     * all 20, to the same pixels.
     */
    @Test
    void trainingCropsAndFlipsAreTheCpusDrawsForEachSampleAndEpoch() throws Exception {
        writeDataset(root, 13);
        TransformSpec train = EVAL.withTrain(16, RandomResizedCrop.defaults());
        assertEqualsTheHostLoader(train, 20, 6);
        assertEquals(0, lastDecodeThreadDraws, "every GPU image's tables drawn by its reader");
        assertEqualsTheHostLoader(train, 20, 6, false, false, true);
        assertEquals(20, lastDecodeThreadDraws, "every GPU image's tables drawn by the decode thread");
    }

    @Test
    void squashedAndBicubicResizesAreTheCpus() throws Exception {
        writeDataset(root, 13);
        assertEqualsTheHostLoader(
                EVAL.withSquash(16, 16).withInterpolation(TransformSpec.Interpolation.BICUBIC), 20, 6);
    }

    @Test
    void sharingTheJpegsWithTheCpuKeepsEverySampleWhereTheLoaderPutsIt() throws Exception {
        writeDataset(root, 40);
        GpuDecodeStats s = assertEqualsTheHostLoader(EVAL.withTrain(16, RandomResizedCrop.defaults()), -1, -1, true);
        assertEquals(2 * 40, s.gpuImages() + s.sharedImages() + s.cpuImages(), s.toString());
        // Each batch of 4 gives the CPU its probe share, one JPEG, until both sides are measured.
        assertTrue(s.sharedImages() >= 2, s.toString());
        assertTrue(s.gpuImages() > 0, s.toString());
        assertTrue(s.cpuImages() <= 2 * 3, "only the PNG, the CMYK and the progressive JPEG must go: " + s);
        // The readers' part: every file of the two epochs' GPU batches (of 4; the rest went whole) read
        // once, each JPEG examined, and the training tables drawn for those nvJPEG takes.
        ReaderTimes r = s.readers();
        assertEquals(2 * 40 - 4 * s.cpuBatches(), r.images(), r + " " + s);
        assertTrue(r.read() > 0 && r.examine() > 0 && r.tables() > 0, r.toString());
        // Where the decode thread's time went: nvJPEG's host side and the CPU's part on every batch, and
        // the events' span of the batches whose events were read (with a split only).
        DecodeThreadTimes t = s.times();
        assertTrue(t.nvjpeg() > 0 && t.resize() > 0 && t.cpu() > 0, t.toString());
        assertTrue(t.gpuSpanBatches() > 0 && t.gpuSpanBatches() <= s.batches() && t.gpuSpan() > 0, t.toString());
    }

    /** Two shuffled epochs through the stage, on the hardware engine, equal the host loader's. */
    GpuDecodeStats assertEqualsTheHostLoader(TransformSpec spec, long gpuImages, long cpuImages) {
        return assertEqualsTheHostLoader(spec, gpuImages, cpuImages, false);
    }

    /** As above; -1: not checked (the split decides it). */
    GpuDecodeStats assertEqualsTheHostLoader(TransformSpec spec, long gpuImages, long cpuImages, boolean share) {
        return assertEqualsTheHostLoader(spec, gpuImages, cpuImages, share, false);
    }

    /** As above; with {@code whole}, every other batch goes whole to the CPU threads. */
    GpuDecodeStats assertEqualsTheHostLoader(
            TransformSpec spec, long gpuImages, long cpuImages, boolean share, boolean whole) {
        return assertEqualsTheHostLoader(spec, gpuImages, cpuImages, share, whole, false);
    }

    /** The training tables the decode thread drew itself in the last run above. */
    long lastDecodeThreadDraws = -1;

    /** As above; with {@code decodeThreadDraws}, the decode thread draws every training table. */
    GpuDecodeStats assertEqualsTheHostLoader(
            TransformSpec spec,
            long gpuImages,
            long cpuImages,
            boolean share,
            boolean whole,
            boolean decodeThreadDraws) {
        dbl.nvjpegHardware(true); // the engine refuses progressive files: the CPU decodes those
        dbl.copyDelayMicros(300); // the stream lags the decode thread: queued work reads the files late
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(true)
                .seed(7)
                .epochs(2)
                .workers(1)
                .transform(spec);
        List<Snapshot> want = host(settings);
        GpuDecodeStage.Builder builder = stage(settings).inFlight(2).readers(3).shareWithCpu(share);
        if (decodeThreadDraws) {
            builder.decodeThreadDraws();
        }
        try (GpuDecodeStage stage = (whole ? builder.wholeEveryOther() : builder).build();
                Arena arena = Arena.ofConfined()) {
            assertEquals(GpuJpegDecoder.Backend.HARDWARE, stage.backend());
            MemorySegment got = arena.allocate(4L * spec.sampleBytes());
            boolean floats = spec.output() == TransformSpec.Output.FLOAT32_CHW;
            for (int k = 0; k < want.size(); k++) {
                Snapshot w = want.get(k);
                try (DeviceBatch b = stage.next()) {
                    assertNotNull(b, "batch " + k);
                    assertEquals(k, b.sequence());
                    assertEquals(w.epoch(), b.epoch());
                    assertEquals(w.batchIndex(), b.batchIndex());
                    assertEquals(w.lastInEpoch(), b.lastInEpoch());
                    assertArrayEquals(
                            floats ? new long[] {w.size(), 3, 16, 16} : new long[] {w.size(), 16, 16, 3}, b.shape());
                    for (int i = 0; i < b.size(); i++) {
                        assertEquals(w.indices()[i], b.index(i), "batch " + k + " position " + i);
                        assertEquals(w.labels()[i], b.label(i), "batch " + k + " position " + i);
                    }
                    b.copyToHost(got);
                    assertArrayEquals(
                            w.pixels(), got.asSlice(0, w.pixels().length).toArray(JAVA_BYTE), "batch " + k);
                    assertTrue(b.skipped().isEmpty());
                    assertTrue(b.stats().sourceBytes() > 0);
                }
            }
            assertNull(stage.next());
            lastDecodeThreadDraws = stage.decodeThreadDraws();
            GpuDecodeStats s = stage.stats();
            assertEquals(want.size(), s.batches());
            if (gpuImages >= 0) {
                assertEquals(gpuImages, s.gpuImages(), s.toString());
                assertEquals(0, s.sharedImages(), s.toString());
            }
            if (cpuImages >= 0) {
                assertEquals(cpuImages, s.cpuImages(), s.toString());
            }
            assertEquals(0, s.failed());
            if (!share) {
                assertEquals(0, s.times().gpuSpanBatches(), "the events are timed only for the split");
                assertEquals(0, s.cpuBatches(), "whole batches only with the split");
            }
            assertEquals(0, dbl.nvjpegStat("bitstream_changed"), "no file refilled under the engine's queued work");
            assertEquals(0, dbl.stat("pageable_async_copies"), "the CPU's images are copied from pinned memory");
            return s;
        }
    }

    /**
     * With each batch's nvJPEG call split over two threads, every batch of two shuffled epochs is the
     * host loader's, in its order with its pixels, under gpu and auto, the training transform's crops
     * and flips included: under gpu the batches of 36 in two parts (one batched call each), the last
     * of 8 in one; under auto as the CPU's share leaves them.
     */
    @Test
    void batchesDecodedInPartsOnTwoThreadsAreTheHostLoadersInItsOrder() throws Exception {
        writeDataset(root, 80);
        dbl.nvjpegHardware(true);
        dbl.copyDelayMicros(300); // the caller's stream lags: the parts' streams must wait for it
        for (boolean share : new boolean[] {false, true}) {
            for (TransformSpec spec : List.of(EVAL, EVAL.withTrain(16, RandomResizedCrop.defaults()))) {
                Loader.Builder settings = Loader.imageFolder(root)
                        .batchSize(36)
                        .shuffle(true)
                        .seed(11)
                        .epochs(2)
                        .workers(1)
                        .transform(spec);
                List<Snapshot> want = host(settings);
                long callsBefore = dbl.nvjpegStat("nvjpeg_batches");
                String what = (share ? "auto" : "gpu") + ", " + (spec == EVAL ? "eval" : "train");
                try (GpuDecodeStage stage = stage(settings)
                                .inFlight(2)
                                .readers(2)
                                .shareWithCpu(share)
                                .decodeThreads(2)
                                .build();
                        Arena arena = Arena.ofConfined()) {
                    MemorySegment got = arena.allocate(36L * spec.sampleBytes());
                    for (int k = 0; k < want.size(); k++) {
                        Snapshot w = want.get(k);
                        try (DeviceBatch b = stage.next()) {
                            assertNotNull(b, what + ": batch " + k);
                            assertEquals(w.batchIndex(), b.batchIndex(), what);
                            for (int i = 0; i < b.size(); i++) {
                                assertEquals(w.indices()[i], b.index(i), what + ": batch " + k + " position " + i);
                            }
                            b.copyToHost(got);
                            assertArrayEquals(
                                    w.pixels(),
                                    got.asSlice(0, w.pixels().length).toArray(JAVA_BYTE),
                                    what + ": batch " + k);
                        }
                    }
                    assertNull(stage.next(), what);
                    GpuDecodeStats st = stage.stats();
                    long gpuBatches = st.batches() - st.cpuBatches();
                    // Less the decoder's colour check at opening: one image, one call.
                    long calls = dbl.nvjpegStat("nvjpeg_batches") - callsBefore - 1;
                    if (!share) {
                        // Four batches of 36 (33 or more JPEGs nvJPEG takes: two parts) and two of 8 (one).
                        assertEquals(4 * 2 + 2, calls, what + ": " + st);
                    } else {
                        // Under auto the CPU's share of a batch decides whether 32 JPEGs are left for
                        // two parts (or any: a batch may go to the CPU whole in shares): two calls at most.
                        assertTrue(calls <= 2 * gpuBatches, what + ": " + calls + " calls, " + st);
                    }
                    assertEquals(0, dbl.nvjpegStat("bitstream_changed"), what);
                }
            }
        }
    }

    /**
     * The CPU's whole batches, every other one: decoded by the reader threads in the background, as
     * the loader decodes them, and handed out in the loader's order between the GPU's, which wait for
     * them; under each transform path (the evaluation's, training crops and flips, the device's
     * normalisation, the host's tail of a policy and erasing).
     */
    @Test
    void theCpusWholeBatchesComeInTheLoadersOrderWithTheLoadersPixels() throws Exception {
        writeDataset(root, 13);
        TransformSpec train = EVAL.withTrain(16, RandomResizedCrop.defaults());
        for (TransformSpec spec : List.of(
                EVAL,
                train,
                EVAL.withOutput(TransformSpec.Output.FLOAT32_CHW),
                train.withAugment("ta_wide")
                        .withOutput(TransformSpec.Output.FLOAT32_CHW)
                        .withErasing(new RandomErasing(0.7, 0.02, 0.33, 0.3, 3.3, null, false)))) {
            GpuDecodeStats s = assertEqualsTheHostLoader(spec, -1, -1, true, true);
            assertTrue(s.cpuBatches() >= 2, s.toString());
            assertEquals(2 * 13, s.gpuImages() + s.sharedImages() + s.cpuImages(), s.toString());
            // A whole batch holds 4 images (3 in an epoch's last), and decodes the PNG, the CMYK and
            // the progressive JPEG too where they fall in it.
            assertTrue(s.sharedImages() >= 3 * s.cpuBatches(), s.toString());
            assertTrue(s.cpuBatches() <= (s.batches() + 1) / 2, "every other batch at most: " + s);
        }
    }

    /**
     * With {@code auto} and a consumer on the GPU that falls behind (batches wait for it), the next
     * batches go whole to the CPU threads and the GPU is left to the consumer's own work: most batches
     * are the CPU's, counted as such, and every batch still comes in the loader's order with its
     * pixels. A consumer on the CPU gets none that way.
     */
    @Test
    void wholeBatchesGoToTheCpuWhileTheConsumerIsBehindInTheLoadersOrder() throws Exception {
        writeDataset(root, 40);
        dbl.nvjpegHardware(true);
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(true)
                .seed(5)
                .epochs(2)
                .workers(1)
                .transform(EVAL);
        List<Snapshot> want = host(settings);
        GpuDecodeStats s = slowConsumer(settings, want, true);
        // The first batches go whole while nvJPEG opens (however long the double takes to), or to
        // the GPU before any waits; every batch after them goes whole while the consumer is behind.
        long meanwhile = s.opening().wholeMeanwhile();
        assertTrue(s.behindBatches() + meanwhile >= want.size() / 2, "most batches the CPU's while behind: " + s);
        assertTrue(s.behindBatches() + meanwhile <= s.cpuBatches(), s.toString());
        assertTrue(s.gpuImages() > 0 || meanwhile > 0, "the first batches, before any waited: " + s);
        assertEquals(2 * 40, s.gpuImages() + s.sharedImages() + s.cpuImages(), s.toString());
        // A consumer on the CPU is left the cores: the split goes by the rates alone.
        GpuDecodeStats onCpu = slowConsumer(settings, want, false);
        assertEquals(0, onCpu.behindBatches(), onCpu.toString());
    }

    /**
     * A stall report's view of the buffers (what a hung producer says of the stage): with a pool of
     * two and the consumer holding one batch, the decode thread fills the other, hands it out and
     * waits for a buffer; then, with both given back, every batch follows.
     */
    @Test
    void theBufferStateSaysWhereEachBufferIsWhileTheConsumerHoldsOne() throws Exception {
        writeDataset(root, 16);
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(false)
                .epochs(1)
                .workers(1)
                .transform(EVAL);
        try (GpuDecodeStage stage =
                stage(settings).inFlight(2).cpuBatches(0).readers(2).build()) {
            String want = "device buffers: 0 free of 2, 1 handed out and not taken, 1 taken by the consumer, the rest "
                    + "with the decode thread; batches handed out 2, decode thread WAITING";
            String state;
            try (DeviceBatch held = stage.next()) {
                assertEquals(0, held.sequence());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                do {
                    Thread.sleep(10);
                    state = stage.bufferState();
                } while (!state.equals(want) && System.nanoTime() < deadline);
                assertEquals(want, state);
            }
            int n = 1;
            for (DeviceBatch next; (next = stage.next()) != null; n++) {
                next.close();
            }
            assertEquals(4, n);
            assertTrue(
                    stage.bufferState()
                            .startsWith("device buffers: 2 free of 2, 0 handed out and not taken, 0 "
                                    + "taken by the consumer"),
                    stage.bufferState());
        }
    }

    /**
     * As {@code stoke serve} feeds a training loop (the cell that hung on two H200 machines in
     * run-4): a consumer slower than the stage, so that every buffer fills and the decode thread
     * waits for one back, each batch copied into a slot of the consumer's as the ring's publisher
     * copies it, a stream lagging the host by 2 ms a copy, the hardware engine leaving the
     * progressive, CMYK and PNG files to the CPU, training crops normalised on the device; under
     * {@code gpu} and {@code auto}. Every batch comes, in the loader's order with its pixels; a
     * batch that does not come within 30 s fails the test with every thread's stack.
     */
    @Test
    void aConsumerSlowerThanTheStageGetsEveryBatchInOrderWithItsPixels() throws Exception {
        writeDataset(root, 40);
        dbl.nvjpegHardware(true);
        dbl.copyDelayMicros(2000);
        TransformSpec spec =
                EVAL.withTrain(16, RandomResizedCrop.defaults()).withOutput(TransformSpec.Output.FLOAT32_CHW);
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(true)
                .seed(3)
                .epochs(2)
                .workers(1)
                .transform(spec);
        List<Snapshot> want = host(settings);
        for (boolean auto : new boolean[] {false, true}) {
            AtomicLong lastBatch = new AtomicLong(System.nanoTime());
            StringBuilder stacks = new StringBuilder();
            try (GpuDecodeStage stage = stage(settings)
                            .inFlight(3)
                            .cpuBatches(3)
                            .readers(3)
                            .shareWithCpu(auto)
                            .consumerOnGpu(true)
                            .build();
                    Arena arena = Arena.ofConfined()) {
                GpuDecodeStage watched = stage;
                Thread watchdog = Thread.ofPlatform().daemon().start(() -> {
                    try {
                        while (System.nanoTime() - lastBatch.get() < TimeUnit.SECONDS.toNanos(30)) {
                            Thread.sleep(100);
                        }
                    } catch (InterruptedException e) {
                        return; // every batch came
                    }
                    synchronized (stacks) {
                        stacks.append(watched.bufferState()).append('\n');
                        for (Map.Entry<Thread, StackTraceElement[]> t :
                                Thread.getAllStackTraces().entrySet()) {
                            stacks.append(t.getKey().getName())
                                    .append(' ')
                                    .append(t.getKey().getState());
                            for (StackTraceElement e : t.getValue()) {
                                stacks.append("\n    at ").append(e);
                            }
                            stacks.append('\n');
                        }
                    }
                    watched.close(); // the waiting next() fails, with the stacks below (a second close is a no-op)
                });
                DeviceBuffer slot = stage.deviceBuffer(4L * spec.sampleBytes());
                CudaEvent copied = stage.event();
                MemorySegment got = arena.allocate(4L * spec.sampleBytes());
                try {
                    for (int k = 0; k < want.size(); k++) {
                        try (DeviceBatch b = stage.next()) {
                            Thread.sleep(30); // the publisher waits for a ring slot the training step holds
                            b.copyToDevice(slot, copied);
                            assertEquals(k, b.sequence());
                            assertEquals(want.get(k).batchIndex(), b.batchIndex());
                            for (int i = 0; i < b.size(); i++) {
                                assertEquals(want.get(k).indices()[i], b.index(i), "batch " + k + " position " + i);
                            }
                            slot.copyToHost(got.asSlice(0, b.byteSize()), 0);
                            assertArrayEquals(
                                    want.get(k).pixels(),
                                    got.asSlice(0, want.get(k).pixels().length).toArray(JAVA_BYTE),
                                    "batch " + k);
                        }
                        lastBatch.set(System.nanoTime());
                    }
                    assertNull(stage.next());
                } catch (IllegalStateException e) {
                    synchronized (stacks) {
                        throw new AssertionError("auto " + auto + ": no batch for 30 s:\n" + stacks, e);
                    }
                } finally {
                    watchdog.interrupt();
                    watchdog.join();
                }
                assertTrue(stage.bufferState().startsWith("device buffers: 6 free of 6"), stage.bufferState());
                assertTrue(
                        stage.stats().times().buffer() > 0,
                        "auto " + auto + ": the decode thread waited for a buffer back: " + stage.stats());
            }
        }
    }

    /**
     * Under {@code auto}, nvJPEG opens on a thread of its own (0.6 s on an H200) while the CPU threads
     * decode the first batches whole: with its opening held, the stage opens, and its first batches
     * come, every image the CPU's, before nvJPEG has; once it has, the GPU takes its share, and every
     * batch is the loader's in its order with its pixels.
     */
    @Test
    void underAutoTheFirstBatchesComeWholeFromTheCpuThreadsWhileNvjpegOpens() throws Exception {
        writeDataset(root, 40);
        dbl.nvjpegHardware(true);
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(true)
                .seed(9)
                .epochs(2)
                .workers(1)
                .transform(EVAL);
        List<Snapshot> want = host(settings);
        int whileHeld = 6;
        CountDownLatch opened = new CountDownLatch(1);
        dbl.nvjpegHoldCreate(true);
        try (GpuDecodeStage stage = buildWhileNvjpegHeld(
                        stage(settings).inFlight(2).readers(2).shareWithCpu(true));
                Arena arena = Arena.ofConfined()) {
            stage.whenOpened(backend -> opened.countDown());
            MemorySegment got = arena.allocate(4L * EVAL.sampleBytes());
            for (int k = 0; k < want.size(); k++) {
                if (k == whileHeld) {
                    assertEquals(1, opened.getCount(), "nvJPEG still held");
                    dbl.nvjpegHoldCreate(false);
                    // Waits for the opening before taking more: the CPU threads, left to run on, could
                    // otherwise decode every batch left whole before it ends (CI did, on 2 slow cores).
                    // Whole batches already dispatched are bounded by the buffers, well short of 14.
                    assertTrue(opened.await(30, TimeUnit.SECONDS), "nvJPEG opened once let go");
                }
                try (DeviceBatch b = stage.next()) {
                    assertInOrderWithPixels(k, want.get(k), b, got);
                    if (k < whileHeld) {
                        for (int i = 0; i < b.size(); i++) {
                            assertFalse(b.decodedOnGpu(i), "batch " + k + " decoded before nvJPEG opened");
                        }
                    }
                }
            }
            assertNull(stage.next());
            assertEquals(GpuJpegDecoder.Backend.HARDWARE, stage.backend());
            GpuDecodeStats s = stage.stats();
            assertTrue(s.opening().wholeMeanwhile() >= whileHeld, s.toString());
            assertTrue(s.gpuImages() > 0, "the GPU took its share once open: " + s);
            assertEquals(2 * 40, s.gpuImages() + s.sharedImages() + s.cpuImages(), s.toString());
        } finally {
            dbl.nvjpegHoldCreate(false);
        }
    }

    /**
     * A stage closed while nvJPEG still opens aside waits for the opening and closes it too (the
     * live-handle counts after each test): nothing is left behind. Outside {@code auto} the stage
     * opens only once nvJPEG has.
     */
    @Test
    void closingWhileNvjpegOpensAsideClosesItOnceOpen() throws Exception {
        writeDataset(root, 12);
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(4).epochs(1).workers(1).transform(EVAL);
        dbl.nvjpegHoldCreate(true);
        Thread release = Thread.ofPlatform().daemon().unstarted(() -> {
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                return;
            }
            dbl.nvjpegHoldCreate(false);
        });
        try {
            try (GpuDecodeStage stage =
                    buildWhileNvjpegHeld(stage(settings).inFlight(2).readers(2).shareWithCpu(true))) {
                try (DeviceBatch first = stage.next()) {
                    assertFalse(first.decodedOnGpu(0));
                }
                release.start(); // close() below waits for the opening, which this lets go
            }
            release.join();
            // gpu mode: the constructor itself waits for nvJPEG.
            dbl.nvjpegHoldCreate(true);
            AtomicBoolean built = new AtomicBoolean();
            AtomicLong meanwhile = new AtomicLong(-1);
            Thread building = Thread.ofPlatform().start(() -> {
                try (GpuDecodeStage stage = stage(settings).readers(2).build()) {
                    built.set(true);
                    meanwhile.set(stage.stats().opening().wholeMeanwhile());
                }
            });
            building.join(300);
            assertFalse(built.get(), "a gpu stage opened before nvJPEG had");
            dbl.nvjpegHoldCreate(false);
            building.join();
            assertTrue(built.get());
            assertEquals(0, meanwhile.get());
        } finally {
            dbl.nvjpegHoldCreate(false);
        }
    }

    /**
     * {@code builder}'s stage, built while the double holds nvJPEG's opening: under {@code auto} it
     * opens before nvJPEG has. A stage that waits for nvJPEG instead fails the test after 20 s, the
     * hold let go and the stage closed, rather than hanging it.
     */
    private GpuDecodeStage buildWhileNvjpegHeld(GpuDecodeStage.Builder builder) throws Exception {
        CompletableFuture<GpuDecodeStage> building = CompletableFuture.supplyAsync(
                builder::build, r -> Thread.ofPlatform().start(r));
        try {
            return building.get(20, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            dbl.nvjpegHoldCreate(false);
            building.join().close();
            throw new AssertionError("the stage waited for nvJPEG to open", e);
        }
    }

    /** The stage under {@code auto}, its batches taken every 40 ms in the host loader's order with its pixels. */
    private GpuDecodeStats slowConsumer(Loader.Builder settings, List<Snapshot> want, boolean consumerOnGpu)
            throws Exception {
        try (GpuDecodeStage stage = stage(settings)
                        .inFlight(2)
                        .readers(2)
                        .shareWithCpu(true)
                        .consumerOnGpu(consumerOnGpu)
                        .build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(4L * EVAL.sampleBytes());
            for (int k = 0; k < want.size(); k++) {
                Thread.sleep(40); // the consumer's own work: the stage fills its buffers meanwhile
                try (DeviceBatch b = stage.next()) {
                    assertInOrderWithPixels(k, want.get(k), b, got);
                }
            }
            assertNull(stage.next());
            return stage.stats();
        }
    }

    /**
     * The decode thread does not wait for a batch's CPU round: with a large PNG in batches of small
     * JPEGs, it decodes the next batches while the PNG decodes, and each batch is still handed out in
     * the loader's order with the loader's pixels, the PNG's included.
     */
    @Test
    void theDecodeThreadGoesOnWhileABatchsCpuRoundRunsAndTheOrderHolds() throws Exception {
        writeDataset(root, 12);
        for (int k = 0; k < 4; k++) {
            writeNoisePng(root.resolve("dog").resolve("big-" + k + ".png"), 900, 700, 3 + k);
        }
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(true)
                .seed(11)
                .epochs(2)
                .workers(1)
                .transform(EVAL);
        List<Snapshot> want = host(settings);
        try (GpuDecodeStage stage = stage(settings).inFlight(3).readers(2).build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(4L * EVAL.sampleBytes());
            for (int k = 0; k < want.size(); k++) {
                try (DeviceBatch b = stage.next()) {
                    assertInOrderWithPixels(k, want.get(k), b, got);
                }
            }
            assertNull(stage.next());
            assertTrue(stage.wentOnBatches() > 0, "the decode thread went on from a batch whose round ran");
        }
    }

    /**
     * With slow reads (a remote source), a batch that has ended is handed out while the next batch's
     * files are still being read: here batch 1, a whole batch of the CPU's with a large PNG in it
     * (it ends after the decode thread has gone on to batch 2), comes while one file of batch 2, the
     * GPU's next, is held back; then every batch follows in the loader's order with its pixels.
     * Before 2026-12-03 batch 1 waited for batch 2's last read.
     */
    @Test
    void aBatchThatHasEndedIsHandedOutWhileTheNextBatchsReadsWait() throws Exception {
        writeDataset(root, 16);
        writeNoisePng(root.resolve("cat").resolve("09-large.png"), 900, 700, 1); // sorts into batch 1
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .shuffle(false)
                .epochs(1)
                .workers(1)
                .transform(EVAL);
        List<Snapshot> want = host(settings);
        long held = want.get(2).indices()[0];
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean releasedLate = new AtomicBoolean();
        Thread watchdog = Thread.ofPlatform().daemon().start(() -> {
            try {
                if (!release.await(20, TimeUnit.SECONDS)) {
                    releasedLate.set(true); // the batches before it never came: let the run end
                    release.countDown();
                }
            } catch (InterruptedException e) {
                release.countDown();
            }
        });
        UnaryOperator<SampleReader> holding = r -> new HeldReader(r, held, release);
        try (GpuDecodeStage stage = stage(settings)
                        .inFlight(3)
                        .readers(2)
                        .shareWithCpu(true)
                        .wholeEveryOther()
                        .readerWrap(holding)
                        .build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(4L * EVAL.sampleBytes());
            for (int k = 0; k < want.size(); k++) {
                if (k == 2) {
                    assertFalse(releasedLate.get(), "batches 0 and 1 came only once batch 2's held read was let go");
                    release.countDown();
                }
                try (DeviceBatch b = stage.next()) {
                    assertInOrderWithPixels(k, want.get(k), b, got);
                }
            }
            assertNull(stage.next());
            assertTrue(stage.stats().cpuBatches() >= 1, stage.stats().toString());
        } finally {
            release.countDown();
            watchdog.join();
        }
    }

    /** A PNG of noise, drawn from {@code seed}: slow to inflate. */
    static void writeNoisePng(Path file, int w, int h, long seed) throws Exception {
        Random r = new Random(seed);
        BufferedImage png = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                png.setRGB(x, y, r.nextInt(1 << 24));
            }
        }
        ImageIO.write(png, "png", file.toFile());
    }

    /** Batch {@code k} handed out is the host loader's {@code w}: its place, its samples and its uint8 pixels. */
    static void assertInOrderWithPixels(int k, Snapshot w, DeviceBatch b, MemorySegment got) {
        assertEquals(k, b.sequence());
        assertEquals(w.batchIndex(), b.batchIndex());
        for (int i = 0; i < b.size(); i++) {
            assertEquals(w.indices()[i], b.index(i), "batch " + k + " position " + i);
        }
        b.copyToHost(got);
        assertArrayEquals(w.pixels(), got.asSlice(0, w.pixels().length).toArray(JAVA_BYTE), "batch " + k);
    }

    /** A reader whose read of one sample waits for a latch first. */
    private record HeldReader(SampleReader reader, long held, CountDownLatch release) implements SampleReader {
        @Override
        public SampleStatus read(int sample) {
            if (sample == held) {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return reader.read(sample);
        }

        @Override
        public MemorySegment bytes() {
            return reader.bytes();
        }

        @Override
        public long length() {
            return reader.length();
        }

        @Override
        public void done() {
            reader.done();
        }

        @Override
        public String message() {
            return reader.message();
        }

        @Override
        public void close() {
            reader.close();
        }
    }

    /** Under FAIL a whole batch with a broken file is refused naming it, as a GPU batch is, and the next follows. */
    @Test
    void aBrokenFileFailsItsWholeBatchOrItsGpuBatchAndTheRestFollowInOrder() throws Exception {
        writeDataset(root, 12);
        for (String name : List.of("00-broken.jpg", "05-broken.jpg", "09-broken.jpg")) {
            Files.write(root.resolve("cat").resolve(name), new byte[] {(byte) 0xFF, (byte) 0xD8, 1, 2, 3});
        }
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(3).workers(1).transform(EVAL);
        // Where the loader names them, by batch; then the stage, every other batch whole on the CPU.
        List<String> want = new ArrayList<>();
        try (Loader loader = settings.onError(ErrorPolicy.SKIP).build()) {
            for (Batch b : loader) {
                try (b) {
                    want.add(b.batchIndex() + ": "
                            + b.skipped().stream().map(e -> e.path()).toList());
                }
            }
        }
        settings.onError(ErrorPolicy.FAIL);
        List<String> got = new ArrayList<>();
        try (GpuDecodeStage stage =
                stage(settings).shareWithCpu(true).wholeEveryOther().build()) {
            for (int k = 0; k < want.size(); k++) {
                try (DeviceBatch b = stage.next()) {
                    assertEquals(k, b.batchIndex());
                    got.add(k + ": []");
                } catch (SampleException e) {
                    assertEquals(k, e.batchIndex());
                    got.add(k + ": " + e.errors().stream().map(x -> x.path()).toList());
                }
            }
            assertNull(stage.next());
            assertTrue(stage.stats().cpuBatches() >= 2, stage.stats().toString());
        }
        assertEquals(String.join("\n", want), String.join("\n", got));
        assertTrue(want.stream().filter(w -> !w.endsWith("[]")).count() >= 2, want.toString());
    }

    @Test
    void aTruncatedJpegGoesWhereTheCpuPathPutsItAndItsBatchmatesStayRight() throws Exception {
        writeDataset(root, 9);
        // A header nvJPEG accepts and entropy data cut short: nvJPEG refuses the batch it is in, so
        // that batch goes to the CPU, which decodes or names the file as the loader does.
        Path whole = root.resolve("dog").resolve("01.jpg");
        byte[] bytes = Files.readAllBytes(whole);
        Files.write(root.resolve("dog").resolve("01-cut.jpg"), Arrays.copyOf(bytes, bytes.length * 2 / 3));
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(4).workers(1).transform(EVAL).onError(ErrorPolicy.SKIP);
        List<Snapshot> want = host(settings);
        try (GpuDecodeStage stage = stage(settings).build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(4L * 16 * 16 * 3);
            for (Snapshot w : want) {
                try (DeviceBatch b = stage.next()) {
                    for (int i = 0; i < b.size(); i++) {
                        assertEquals(w.indices()[i], b.index(i));
                    }
                    b.copyToHost(got);
                    assertArrayEquals(
                            w.pixels(), got.asSlice(0, w.pixels().length).toArray(JAVA_BYTE));
                }
            }
            assertNull(stage.next());
            assertTrue(stage.stats().cpuImages() >= 1, stage.stats().toString());
        }
    }

    @Test
    void everyBadFileIsNamedAsTheHostLoaderNamesItAndZeroedUnderSkip() throws Exception {
        writeDataset(root, 6);
        BadImages.allBadFolder(root); // empty, cut, header only, a bomb, garbage after SOI ...
        assertBadFilesNamedAndZeroed(EVAL, false);
        assertBadFilesNamedAndZeroed(EVAL, true); // every other batch whole on the CPU
        assertBadFilesNamedAndZeroed(EVAL.withOutput(TransformSpec.Output.FLOAT32_CHW), true);
    }

    /** As above, with the host's tail: the policy and the erasing after the device's resize, float32. */
    @Test
    void everyBadFileIsNamedAndZeroedUnderSkipWithThePolicyAndTheErasingOnTheHost() throws Exception {
        writeDataset(root, 6);
        BadImages.allBadFolder(root);
        assertBadFilesNamedAndZeroed(
                EVAL.withTrain(16, RandomResizedCrop.defaults())
                        .withAugment("ta_wide")
                        .withOutput(TransformSpec.Output.FLOAT32_CHW)
                        .withErasing(new RandomErasing(0.5, 0.02, 0.33, 0.3, 3.3, null, false)),
                false);
    }

    private void assertBadFilesNamedAndZeroed(TransformSpec spec, boolean whole) throws Exception {
        // Shuffled over three epochs, so that a bad file's position held another sample's pixels before.
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .workers(1)
                .shuffle(true)
                .seed(5)
                .epochs(3)
                .transform(spec)
                .onError(ErrorPolicy.SKIP);
        List<String> want = new ArrayList<>();
        List<Snapshot> pixels = host(settings);
        try (Loader loader = settings.build()) {
            for (Batch b : loader) {
                try (b) {
                    b.skipped().forEach(e -> want.add(e.path() + " " + e.status() + ": " + e.detail()));
                }
            }
        }
        List<String> got = new ArrayList<>();
        List<byte[]> pixelsGot = new ArrayList<>();
        GpuDecodeStage.Builder builder = stage(settings);
        try (GpuDecodeStage stage = (whole ? builder.shareWithCpu(true).wholeEveryOther() : builder).build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment copy = arena.allocate(4L * spec.sampleBytes());
            for (Snapshot w : pixels) {
                try (DeviceBatch b = stage.next()) {
                    b.skipped().forEach(e -> got.add(e.path() + " " + e.status() + ": " + e.detail()));
                    b.copyToHost(copy);
                    pixelsGot.add(copy.asSlice(0, w.pixels().length).toArray(JAVA_BYTE));
                }
            }
            assertNull(stage.next());
        }
        assertEquals(3 * 9, want.size(), want.toString());
        assertEquals(String.join("\n", want), String.join("\n", got));
        for (int k = 0; k < pixels.size(); k++) {
            assertArrayEquals(pixels.get(k).pixels(), pixelsGot.get(k), "batch " + k + ": skipped samples are zeros");
        }
    }

    @Test
    void floatOutputIsNormalisedOnTheDeviceAsTheHostLoaderNormalises() throws Exception {
        writeDataset(root, 7);
        // A skipped sample is 0.0 in the loader's float output, not normalised black.
        Files.write(root.resolve("cat").resolve("00-broken.jpg"), new byte[] {(byte) 0xFF, (byte) 0xD8, 1, 2, 3});
        TransformSpec f32 = EVAL.withOutput(TransformSpec.Output.FLOAT32_CHW);
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(5).workers(1).transform(f32).onError(ErrorPolicy.SKIP);
        List<Snapshot> want = host(settings);
        try (GpuDecodeStage stage = stage(settings).build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(4L * 5 * 3 * 16 * 16);
            for (Snapshot w : want) {
                try (DeviceBatch b = stage.next()) {
                    assertArrayEquals(new long[] {w.size(), 3, 16, 16}, b.shape());
                    b.copyToHost(got);
                    float[] dev = got.asSlice(0, w.pixels().length).toArray(JAVA_FLOAT);
                    float[] host = MemorySegment.ofArray(w.pixels()).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
                    assertArrayEquals(host, dev);
                }
            }
            assertNull(stage.next());
        }
    }

    @Test
    void aBrokenFileFailsItsBatchNamingItAndTheNextBatchFollows() throws Exception {
        writeDataset(root, 5);
        Files.write(root.resolve("cat").resolve("00-broken.jpg"), new byte[] {(byte) 0xFF, (byte) 0xD8, 1, 2, 3});
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(4).workers(1).transform(EVAL);
        try (GpuDecodeStage stage = stage(settings).build()) {
            SampleException e = assertThrows(SampleException.class, stage::next);
            assertEquals(1, e.errors().size());
            assertTrue(
                    e.errors().get(0).path().endsWith("00-broken.jpg"),
                    e.errors().toString());
            assertEquals(0, e.batchIndex());
            try (DeviceBatch b = stage.next()) {
                assertEquals(1, b.batchIndex());
            }
            assertNull(stage.next());
        }
    }

    @Test
    void underSkipABrokenFileIsZeroedAndListedWithTheRestOfItsBatchIntact() throws Exception {
        writeDataset(root, 5);
        Files.write(root.resolve("cat").resolve("00-broken.jpg"), new byte[] {(byte) 0xFF, (byte) 0xD8, 1, 2, 3});
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(6).workers(1).transform(EVAL).onError(ErrorPolicy.SKIP);
        Snapshot want = host(settings).get(0);
        try (GpuDecodeStage stage = stage(settings).build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(6L * 16 * 16 * 3);
            try (DeviceBatch b = stage.next()) {
                assertEquals(1, b.skipped().size());
                assertEquals(0, b.skipped().get(0).position());
                assertTrue(b.skipped().get(0).status() != SampleStatus.OK);
                b.copyToHost(got);
                assertArrayEquals(
                        want.pixels(), got.asSlice(0, want.pixels().length).toArray(JAVA_BYTE));
            }
            assertEquals(1, stage.stats().failed());
        }
    }

    @Test
    void startsWhereTheLoaderStartsFromTheStartEpochAndBatch() throws Exception {
        writeDataset(root, 13);
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(3)
                .shuffle(true)
                .seed(5)
                .epochs(2)
                .startEpoch(3)
                .startBatch(2)
                .workers(1)
                .transform(EVAL);
        List<Snapshot> want = host(settings);
        assertEquals(3 + 5, want.size(), "epoch 3 from its batch 2 (of 5), then epoch 4");
        try (GpuDecodeStage stage = stage(settings).build()) {
            for (Snapshot w : want) {
                try (DeviceBatch b = stage.next()) {
                    assertEquals(w.epoch(), b.epoch());
                    assertEquals(w.batchIndex(), b.batchIndex());
                    for (int i = 0; i < b.size(); i++) {
                        assertEquals(w.indices()[i], b.index(i));
                    }
                }
            }
            assertNull(stage.next());
        }
    }

    @Test
    void anEpochOfBadFilesEndsTheRunAsTheLoaderEndsIt() throws Exception {
        for (int i = 0; i < 5; i++) {
            Path bad = root.resolve("cat").resolve(i + ".jpg");
            Files.createDirectories(bad.getParent());
            Files.write(bad, new byte[] {(byte) 0xFF, (byte) 0xD8, (byte) i});
        }
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(2).epochs(0).transform(EVAL).onError(ErrorPolicy.SKIP);
        for (boolean whole : new boolean[] {false, true}) {
            GpuDecodeStage.Builder builder = stage(settings);
            assertEpochOfBadFilesEndsTheRun(whole ? builder.shareWithCpu(true).wholeEveryOther() : builder);
        }
    }

    private static void assertEpochOfBadFilesEndsTheRun(GpuDecodeStage.Builder builder) {
        try (GpuDecodeStage stage = builder.build()) {
            for (int k = 0; k < 3; k++) {
                try (DeviceBatch b = stage.next()) {
                    assertEquals(b.size(), b.skipped().size());
                }
            }
            NoSampleDecodedException e = assertThrows(NoSampleDecodedException.class, stage::next);
            assertEquals(0, e.epoch());
            assertEquals(5, e.failed());
            assertThrows(NoSampleDecodedException.class, stage::next, "every later call too");
        }
    }

    // Two epochs as a Python sampler might give them (RASampler's repeats, a batch sampler's sizes):
    // the PNG (4), the CMYK JPEG (5) and the progressive one (3) among them, not the seed's order.
    private static final int[] FED_SIZES_0 = {3, 4, 1, 4, 4};
    private static final int[] FED_ORDER_0 = {7, 7, 4, 0, 1, 2, 3, 5, 12, 12, 12, 6, 8, 9, 10, 11};
    private static final int[] FED_SIZES_1 = {4, 4, 1};
    private static final int[] FED_ORDER_1 = {12, 11, 10, 9, 8, 7, 6, 5, 4};

    /**
     * An order feed (a Python sampler's orders: repeats, batches of their own sizes) gives the
     * stage's batches as it gives the host loader's: every batch of two fed epochs and the next's
     * first, with its epoch, index, size, indices, labels and pixels, under {@code gpu} and {@code
     * auto}, evaluation and training crops, and with every other batch whole on the CPU. A long last
     * epoch keeps the feed from ending while either side reads ahead.
     */
    @Test
    void anOrderFeedsBatchesAreTheHostLoadersWithTheirSizesAndPixels() throws Exception {
        writeDataset(root, 13);
        int[] tailSizes = new int[64];
        Arrays.fill(tailSizes, 4);
        int[] tailOrder = new int[64 * 4];
        Arrays.setAll(tailOrder, i -> (i * 5) % 13);
        Path feed = Files.write(
                root.resolve("feed"),
                OrderFeedRecords.epochs(0, FED_SIZES_0, FED_ORDER_0, FED_SIZES_1, FED_ORDER_1, tailSizes, tailOrder));
        int n = FED_SIZES_0.length + FED_SIZES_1.length + 2;
        for (TransformSpec spec : List.of(EVAL, EVAL.withTrain(16, RandomResizedCrop.defaults()))) {
            Loader.Builder settings = Loader.imageFolder(root)
                    .batchSize(4)
                    .seed(5)
                    .epochs(0)
                    .workers(1)
                    .transform(spec)
                    .orderFeed(feed);
            List<Snapshot> want = hostTake(settings, n);
            assertEquals(1, want.get(2).size(), "the fed sizes: 1 at batch 2");
            assertEquals(
                    List.of(7L, 7L, 4L),
                    Arrays.stream(want.get(0).indices()).boxed().toList());
            for (String mode : List.of("gpu", "auto", "auto, every other batch whole")) {
                String what = mode + ", " + (spec == EVAL ? "eval" : "train");
                GpuDecodeStage.Builder b =
                        stage(settings).inFlight(2).readers(2).shareWithCpu(!mode.equals("gpu"));
                try (GpuDecodeStage stage = (mode.endsWith("whole") ? b.wholeEveryOther() : b).build();
                        Arena arena = Arena.ofConfined()) {
                    MemorySegment got = arena.allocate(4L * spec.sampleBytes());
                    for (int k = 0; k < n; k++) {
                        Snapshot w = want.get(k);
                        try (DeviceBatch d = stage.next()) {
                            assertNotNull(d, what + ": batch " + k);
                            assertEquals(w.epoch(), d.epoch(), what + ": batch " + k);
                            assertEquals(w.size(), d.size(), what + ": batch " + k);
                            assertEquals(w.lastInEpoch(), d.lastInEpoch(), what + ": batch " + k);
                            for (int i = 0; i < d.size(); i++) {
                                assertEquals(w.labels()[i], d.label(i), what + ": batch " + k + " position " + i);
                            }
                            assertInOrderWithPixels(k, w, d, got);
                        }
                    }
                }
            }
        }
    }

    /**
     * The consumer gives an epoch's order when it starts reading that epoch (stoke.DataLoader at
     * {@code iter()}, as torch's DataLoader asks its sampler), so every batch of the epoch before must
     * come while the next order has not: through a real pipe (a FIFO, as {@code /dev/fd/N} is), epoch
     * 0's batches all come, the last one's CPU round included, before epoch 1's record is written;
     * then epoch 1's, and the stage ends after its two epochs. Under {@code gpu} and {@code auto}
     * (whole batches too); a stage that waited on the feed before handing out epoch 0's last batch
     * fails here after 20 s.
     */
    @Test
    void everyBatchOfAnEpochComesBeforeTheFeedGivesTheNextEpochsOrder() throws Exception {
        writeDataset(root, 13);
        for (String mode : List.of("gpu", "auto", "auto, every other batch whole")) {
            Path fifo = fifo(root.resolve("fifo-" + mode.length()));
            Loader.Builder settings = Loader.imageFolder(root)
                    .batchSize(4)
                    .seed(5)
                    .epochs(2)
                    .workers(1)
                    .transform(EVAL.withTrain(16, RandomResizedCrop.defaults()))
                    .orderFeed(fifo);
            CountDownLatch epoch0Read = new CountDownLatch(1);
            // Threads of their own: the common pool may have one thread, which the writer's wait would hold.
            ExecutorService threads = Executors.newFixedThreadPool(2);
            CompletableFuture<Void> writer = CompletableFuture.runAsync(
                    () -> {
                        try (var out = Files.newOutputStream(fifo)) { // opens once the stage opens the reading end
                            out.write(OrderFeedRecords.epochs(0, FED_SIZES_0, FED_ORDER_0));
                            out.flush();
                            if (!epoch0Read.await(60, TimeUnit.SECONDS)) {
                                return;
                            }
                            out.write(OrderFeedRecords.epochs(1, FED_SIZES_1, FED_ORDER_1));
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    },
                    threads);
            GpuDecodeStage.Builder b = stage(settings).inFlight(2).readers(2).shareWithCpu(!mode.equals("gpu"));
            try (GpuDecodeStage stage = (mode.endsWith("whole") ? b.wholeEveryOther() : b).build()) {
                List<Long> seen = new ArrayList<>();
                for (int k = 0; k < FED_SIZES_0.length + FED_SIZES_1.length; k++) {
                    if (k == FED_SIZES_0.length) {
                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                        while (!stage.awaitingOrder() && System.nanoTime() < until) {
                            Thread.sleep(1);
                        }
                        assertTrue(stage.awaitingOrder(), mode + ": the stage says it waits for epoch 1's order");
                        epoch0Read.countDown();
                    }
                    CompletableFuture<List<Long>> next = CompletableFuture.supplyAsync(
                            () -> {
                                try (DeviceBatch d = stage.next()) {
                                    assertNotNull(d);
                                    List<Long> batch = new ArrayList<>();
                                    batch.add(d.epoch());
                                    for (int i = 0; i < d.size(); i++) {
                                        batch.add(d.index(i));
                                    }
                                    return batch;
                                }
                            },
                            threads);
                    try {
                        List<Long> batch = next.get(20, TimeUnit.SECONDS);
                        assertEquals(k < FED_SIZES_0.length ? 0L : 1L, batch.get(0), mode + ": batch " + k);
                        seen.addAll(batch.subList(1, batch.size()));
                    } catch (TimeoutException e) {
                        epoch0Read.countDown();
                        throw new AssertionError(
                                mode + ": batch " + k + " did not come within 20 s: " + stage.bufferState());
                    }
                }
                List<Long> fed = new ArrayList<>();
                Arrays.stream(FED_ORDER_0).forEach(i -> fed.add((long) i));
                Arrays.stream(FED_ORDER_1).forEach(i -> fed.add((long) i));
                assertEquals(fed, seen, mode + ": every fed sample, in the fed order");
                assertNull(stage.next(), mode + ": two epochs, then the end");
            } finally {
                epoch0Read.countDown();
                threads.shutdownNow();
            }
            writer.get(20, TimeUnit.SECONDS);
        }
    }

    /**
     * A stage that cannot open (the device refuses its kernels) leaves the loader to decode on the
     * CPU, as {@code stoke serve} does: it must have read nothing from the feed's pipe, whose epoch 0
     * the consumer may have written already, or the loader waits for a record that is gone.
     */
    @Test
    void aStageThatFailsToOpenLeavesTheOrderFeedWholeToTheLoaderThatDecodesInstead() throws Exception {
        writeDataset(root, 13);
        Path fifo = fifo(root.resolve("fifo"));
        Loader.Builder settings = Loader.imageFolder(root)
                .batchSize(4)
                .seed(5)
                .epochs(0)
                .workers(1)
                .transform(EVAL)
                .orderFeed(fifo);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        CountDownLatch read = new CountDownLatch(1);
        try {
            CompletableFuture<Void> writer = CompletableFuture.runAsync(
                    () -> {
                        try (var out = Files.newOutputStream(fifo)) { // the consumer's side, open until the end
                            out.write(OrderFeedRecords.epochs(0, FED_SIZES_0, FED_ORDER_0));
                            out.flush();
                            read.await(60, TimeUnit.SECONDS);
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    },
                    threads);
            dbl.failCall("cuModuleLoadData", 1, CudaDriver.CUDA_ERROR_LAUNCH_FAILED);
            List<String> said = new ArrayList<>();
            assertTrue(GpuDecodeStage.openOrCpu(stage(settings), said::add).isEmpty(), "the stage did not open");
            assertTrue(said.get(0).endsWith("; decoding on the CPU"), said.toString());
            CompletableFuture<List<Long>> cpu = CompletableFuture.supplyAsync(
                    () -> {
                        List<Long> got = new ArrayList<>();
                        try (Loader loader = settings.build()) {
                            for (int k = 0; k < FED_SIZES_0.length; k++) {
                                try (Batch b = loader.next()) {
                                    for (int i = 0; i < b.size(); i++) {
                                        got.add(b.index(i));
                                    }
                                }
                            }
                        }
                        return got;
                    },
                    threads);
            List<Long> got;
            try {
                got = cpu.get(20, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("the loader got no epoch 0 from the feed within 20 s: the stage read it");
            }
            assertEquals(Arrays.stream(FED_ORDER_0).mapToObj(i -> (long) i).toList(), got);
            read.countDown();
            writer.get(20, TimeUnit.SECONDS);
        } finally {
            read.countDown();
            threads.shutdownNow();
        }
    }

    /** A named pipe at {@code at}, as {@code /dev/fd/N} is to the producer: opening either end waits for the other. */
    private static Path fifo(Path at) throws Exception {
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", at.toString()).inheritIO().start().waitFor(),
                "mkfifo " + at);
        return at;
    }

    /** A feed that breaks its format (sizes that do not add up) fails the stage's next() with its words. */
    @Test
    void aBrokenOrderFeedFailsTheStageNamingTheFeedAndWhy() throws Exception {
        writeDataset(root, 13);
        Path feed = Files.write(root.resolve("feed"), OrderFeedRecords.epochs(0, new int[] {3, 4}, FED_ORDER_0));
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(4).epochs(0).transform(EVAL).orderFeed(feed);
        for (boolean auto : new boolean[] {false, true}) {
            try (GpuDecodeStage stage = stage(settings).shareWithCpu(auto).build()) {
                RuntimeException e = assertThrows(RuntimeException.class, stage::next);
                assertTrue(
                        e.getMessage()
                                .contains(feed + ": epoch 0's order has batches of 7 samples in all, and says 16"),
                        e.getMessage());
            }
        }
    }

    /**
     * Each of torchvision's policies after the device's decode and resize: the crops come back, the
     * reader threads run the policy (its draws following the crop's and the flip's on the sample's
     * stream), and every batch equals the host loader's, the CPU's own images included.
     */
    @Test
    void augmentationPoliciesRunOnTheHostAfterTheDevicesResizeAsTheLoaderRunsThem() throws Exception {
        writeDataset(root, 13);
        for (String policy : List.of("ta_wide", "ra", "aa:imagenet", "augmix")) {
            assertEqualsTheHostLoader(
                    EVAL.withTrain(16, RandomResizedCrop.defaults()).withAugment(policy), 20, 6);
        }
    }

    /**
     * Random erasing after the host's tail, where the recipes put it: on the float32 output after
     * Normalize with random values, after a policy (ResNet50 v2's recipe), and on uint8 with a value,
     * and on float32 with a value and no policy; every batch the host loader's to the bit.
     */
    @Test
    void randomErasingRunsOnTheOutputAsTheLoaderRunsIt() throws Exception {
        writeDataset(root, 13);
        TransformSpec train = EVAL.withTrain(16, RandomResizedCrop.defaults());
        assertEqualsTheHostLoader(
                train.withAugment("ta_wide")
                        .withOutput(TransformSpec.Output.FLOAT32_CHW)
                        .withErasing(new RandomErasing(0.7, 0.02, 0.33, 0.3, 3.3, null, false)),
                20,
                6);
        assertEqualsTheHostLoader(
                train.withErasing(new RandomErasing(1, 0.02, 0.33, 0.3, 3.3, new float[] {7, 8, 9}, true)), 20, 6);
        assertEqualsTheHostLoader( // no policy: the device's crop converted on the host as the CPU converts its own
                train.withOutput(TransformSpec.Output.FLOAT32_CHW)
                        .withErasing(new RandomErasing(0.5, 0.02, 0.33, 0.3, 3.3, new float[] {0.5f}, false)),
                20,
                6);
    }

    @Test
    void closingWithBatchesOnTheDeviceAndHeldFreesEverything() throws Exception {
        writeDataset(root, 13);
        Loader.Builder settings =
                Loader.imageFolder(root).batchSize(2).epochs(0).transform(EVAL);
        assertClosingFreesEverything(stage(settings).inFlight(3));
        // With the CPU's whole batches running in the background as it closes.
        assertClosingFreesEverything(
                stage(settings).inFlight(3).shareWithCpu(true).wholeEveryOther());
    }

    private static void assertClosingFreesEverything(GpuDecodeStage.Builder builder) {
        GpuDecodeStage stage = builder.build();
        DeviceBatch held = stage.next();
        stage.next().close();
        stage.close();
        assertThrows(IllegalStateException.class, held::pointer);
        assertThrows(IllegalStateException.class, stage::next);
        stage.close();
    }

    /**
     * {@code n} JPEGs in two classes of sizes that resize differently; from the fourth on, one
     * progressive JPEG, one PNG and one CMYK JPEG among them.
     */
    static void writeDataset(Path root, int n) throws Exception {
        Random r = new Random(n);
        try (JpegCompressor jc = new JpegCompressor();
                Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < n; i++) {
                int w = 20 + r.nextInt(40);
                int h = 20 + r.nextInt(40);
                Path file = root.resolve(i % 2 == 0 ? "cat" : "dog").resolve(String.format("%02d.jpg", i));
                Files.createDirectories(file.getParent());
                if (i == 4) {
                    BufferedImage png = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
                    for (int y = 0; y < h; y++) {
                        for (int x = 0; x < w; x++) {
                            png.setRGB(x, y, (x * 9) << 16 | (y * 7) << 8 | ((x + y) * 3 & 255));
                        }
                    }
                    ImageIO.write(png, "png", file.toFile()); // named .jpg: sniffed by content
                    continue;
                }
                boolean cmyk = i == 5;
                int channels = cmyk ? 4 : 3;
                MemorySegment pixels = arena.allocate((long) channels * w * h);
                for (int y = 0; y < h; y++) {
                    for (int x = 0; x < w; x++) {
                        for (int c = 0; c < channels; c++) {
                            int v = (x * (3 + c) + y * (5 - c) + i * 11) % 256 + r.nextInt(16) - 8;
                            pixels.set(JAVA_BYTE, (long) channels * (y * w + x) + c, (byte) Math.clamp(v, 0, 255));
                        }
                    }
                }
                int subsamp = cmyk ? TurboJpeg.TJSAMP_444 : i % 3 == 0 ? TurboJpeg.TJSAMP_420 : TurboJpeg.TJSAMP_444;
                int flags = i == 3 ? TurboJpeg.TJFLAG_PROGRESSIVE : 0;
                MemorySegment jpeg = arena.allocate(JpegCompressor.maxSize(w, h, subsamp));
                long size = jc.compress(
                        pixels,
                        w,
                        channels * w,
                        h,
                        cmyk ? TurboJpeg.TJPF_CMYK : TurboJpeg.TJPF_RGB,
                        subsamp,
                        90,
                        flags,
                        jpeg);
                Files.write(file, jpeg.asSlice(0, size).toArray(JAVA_BYTE));
            }
        }
    }
}
