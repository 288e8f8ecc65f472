package io.stoke.gpu;

import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.cuda.HostRegistration;
import io.stoke.loader.Batch;
import io.stoke.loader.BatchSource;
import io.stoke.loader.Loader;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.internal.Joins;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingLayout;
import io.stoke.ring.SlotRing;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Moves a loader's batches to a CUDA device: the GPU stage.
 *
 * <pre>{@code
 * try (Loader loader = Loader.imageFolder(root).batchSize(256).build();
 *      DeviceStage gpu = DeviceStage.builder(loader).device(0).inFlight(3).normalizeOnDevice().build()) {
 *     for (DeviceBatch b; (b = gpu.next()) != null; ) {
 *         try (b) {
 *             b.waitOn(myStream);                // or b.synchronize()
 *             train(b.pointer(), b.shape());     // float32 [n, 3, H, W] on the device
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>On construction it pins the ring's slot memory once ({@code cuMemHostRegister}), so copies
 * from it are DMA that overlaps compute, and allocates {@code K} ({@link Builder#inFlight}) device
 * buffers. A copier thread then takes each ready host batch as soon as a device buffer is free,
 * queues its copy on the stage's stream, records an event, and hands a {@link DeviceBatch} to
 * {@link #next()}. A second thread waits for each copy's event and returns the host slot to the
 * loader's workers right then: the workers refill it while the consumer is still using the
 * device copy. The device buffer returns to the pool when the consumer closes the DeviceBatch.
 * So at most K batches are on the device (queued, copying or held), and up to K-1 are copied
 * ahead while the consumer computes.
 *
 * <p>With {@link Builder#normalize}, the uint8 HWC batch crosses the bus (a quarter of the bytes
 * of float32) and a kernel turns it into float32 CHW, {@code (x / 255 - mean) / std}, bit-identical
 * to {@link NormalizeReference} and to the host loader's float output.
 *
 * <p>Without a CUDA driver or device the builder throws {@link DeviceUnavailableException}, with one
 * sentence saying which; {@link #openOrHost} instead reports it and returns empty so the caller goes
 * on with host batches. Close the stage before the loader (try-with-resources does, in reverse
 * order): the pinned registration must be removed before the ring's memory goes.
 */
public final class DeviceStage implements BatchSource<DeviceBatch>, AutoCloseable {
    private static final String STAGE = "GPU stage";

    private final SlotRing ring;
    private final Supplier<Batch> source;
    private final RingGeometry geometry;
    private final boolean normalize;
    private final float[] mean;
    private final float[] std;
    private final int inFlight;
    private final CudaDriver driver;
    private final CudaContext context;
    private final ThreadLocal<Boolean> current = new ThreadLocal<>();
    private final StageResources resources = new StageResources();
    private final CudaStream stream;
    private final HostRegistration pinned;
    private final DeviceKernels kernels;
    private final DeviceEntry[] entries;
    private final BlockingQueue<DeviceEntry> free;
    private final Handoff handoff;
    private final BlockingQueue<DeviceEntry> reap; // entries whose host slot awaits its copy's event
    private final Thread copier;
    private final Thread reaper;
    private final AtomicLong batches = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong slotsReturned = new AtomicLong();
    private final AtomicInteger onDevice = new AtomicInteger();
    private final AtomicInteger maxOnDevice = new AtomicInteger();
    /** What the DeviceBatches handed out ask of this stage: kept off the stage's public face. */
    private final DeviceBatchOwner owner = new DeviceBatchOwner() {
        @Override
        public void returned(DeviceEntry entry) {
            entry.handedOut = null;
            release(entry);
        }

        @Override
        public long sampleBytes() {
            return normalize ? geometry.sampleBytes() * 4 : geometry.sampleBytes();
        }

        @Override
        public long[] shape(int n) {
            return normalize
                    ? new long[] {n, 3, geometry.d0(), geometry.d1()}
                    : new long[] {n, geometry.d0(), geometry.d1(), geometry.d2()};
        }

        @Override
        public int dtype() {
            return normalize ? RingLayout.DTYPE_FLOAT32 : geometry.dtype();
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
            DeviceStage.this.ensureCurrent();
        }
    };

    private volatile boolean closed;

    private DeviceStage(Builder b) {
        this.ring = b.ring;
        this.source = b.source;
        this.geometry = ring.geometry();
        this.normalize = b.mean != null;
        this.mean = b.mean;
        this.std = b.std;
        this.inFlight = b.inFlight;
        if (normalize
                && (geometry.dtype() != RingLayout.DTYPE_UINT8
                        || geometry.dimLayout() != RingLayout.LAYOUT_HWC
                        || geometry.d2() != 3)) {
            throw new IllegalArgumentException("normalising on the device needs uint8 HWC RGB batches"
                    + " (TransformSpec.Output.UINT8_HWC); this ring holds dtype " + geometry.dtype());
        }
        if (normalize && (long) geometry.samplesPerSlot() * geometry.d0() * geometry.d1() > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("a batch of more than 2^32 pixels cannot be normalised in one launch");
        }
        this.driver = b.driver != null ? b.driver : DeviceOpening.driver();
        this.context = DeviceOpening.primaryContext(driver, b.device);
        try {
            resources.keep(context);
            long slotBytes = geometry.sampleBytes() * geometry.samplesPerSlot();
            // Once, up front: pinning walks every page, far too slow per batch.
            this.pinned = resources.keep(HostRegistration.register(
                    driver,
                    ring.memory().asSlice(geometry.slotsOffset(), geometry.slotStride() * geometry.slotCount())));
            this.stream = resources.keep(CudaStream.create(driver));
            this.kernels = normalize ? resources.keep(new DeviceKernels(driver)) : null;
            Arena arena = Arena.ofShared();
            resources.keep(arena::close);
            this.entries = new DeviceEntry[inFlight];
            this.free = new ArrayBlockingQueue<>(inFlight);
            for (int i = 0; i < inFlight; i++) {
                DeviceBuffer staging = normalize ? resources.keep(DeviceBuffer.allocate(driver, slotBytes)) : null;
                DeviceBuffer out = resources.keep(DeviceBuffer.allocate(driver, normalize ? slotBytes * 4 : slotBytes));
                CudaEvent copied = resources.keep(CudaEvent.create(driver));
                CudaEvent done = normalize ? resources.keep(CudaEvent.create(driver)) : copied;
                CudaEvent released = resources.keep(CudaEvent.create(driver));
                entries[i] = new DeviceEntry(
                        i,
                        staging,
                        out,
                        copied,
                        done,
                        released,
                        arena.allocate(4L * geometry.samplesPerSlot(), 64),
                        arena.allocate(8L * geometry.samplesPerSlot(), 64));
                free.add(entries[i]);
            }
            // Bounded: at most K entries circulate, plus one message per failure the consumer has not read.
            this.handoff = new Handoff(STAGE, inFlight + 4);
            this.reap = new ArrayBlockingQueue<>(inFlight + 1);
        } catch (RuntimeException e) {
            resources.closeAll(e);
            throw e;
        }
        this.reaper = Thread.ofPlatform().name("stoke-gpu-reaper").daemon().unstarted(this::reapLoop);
        this.copier = Thread.ofPlatform().name("stoke-gpu-copier").daemon().unstarted(this::copyLoop);
        reaper.start();
        copier.start();
    }

    /**
     * Why no device stage can be opened here, in one sentence, or null when a driver with at least
     * one device is present. Loads the driver and calls {@code cuInit}; never throws.
     */
    public static String unavailableReason() {
        return CudaAvailability.deviceMissing().orElse(null);
    }

    /**
     * Opens a stage with {@code builder}, or, when no CUDA device can be used, passes the one-line
     * reason to {@code report} and returns empty so the caller carries on with host batches.
     * Errors other than "no driver / no device" still throw.
     */
    public static Optional<DeviceStage> openOrHost(Builder builder, Consumer<String> report) {
        try {
            return Optional.of(builder.build());
        } catch (DeviceUnavailableException e) {
            report.accept(e.getMessage() + "; continuing with host batches");
            return Optional.empty();
        }
    }

    /**
     * A stage over {@code loader}'s ring and batches. From {@link Builder#build()} on, the stage's
     * copier thread is the loader's one consumer: do not call {@link Loader#next()} yourself.
     */
    public static Builder builder(Loader loader) {
        Builder b = new Builder(loader.ring(), loader::next);
        b.spec = loader.transform();
        return b;
    }

    /**
     * A stage over any producer of batches that live in {@code ring}'s slots (a ring consumer, or
     * a test): {@code source} returns the next batch, or null at the end; closing a batch must return
     * its slot.
     */
    public static Builder builder(SlotRing ring, Supplier<Batch> source) {
        return new Builder(ring, source);
    }

    // ------------------------------------------------------------------ consumer side

    /**
     * The next batch on the device, waiting while none is ready; null after the last. Its copy (and
     * normalisation) may still be running: order work after {@link DeviceBatch#readyEvent()}. For one
     * consumer thread; batches may be closed on any thread. Waits while all K device buffers are in
     * use, so close one before asking for more than K.
     *
     * @throws SampleException as the loader throws it (the stage goes on with the next batch)
     * @throws NoSampleDecodedException as the loader throws it, after the batches before it
     * @throws IllegalStateException when the stage is closed, or failed (the cause says how)
     */
    public DeviceBatch next() {
        return handoff.next(owner, () -> closed);
    }

    /** Binds the stage's context to the calling thread once; driver calls need it current. */
    private void ensureCurrent() {
        if (current.get() == null) {
            context.makeCurrent();
            current.set(Boolean.TRUE);
        }
    }

    private void release(DeviceEntry entry) {
        // Two owners per use: the reaper (host slot) and the consumer (device buffer). Last one frees it.
        if (entry.owners.decrementAndGet() == 0) {
            onDevice.decrementAndGet();
            free.offer(entry);
        }
    }

    // ------------------------------------------------------------------ copier thread

    private void copyLoop() {
        try {
            context.makeCurrent();
            while (!closed && handoff.failure() == null) {
                DeviceEntry entry = free.take();
                Batch host;
                try {
                    host = source.get();
                } catch (SampleException e) {
                    free.offer(entry);
                    handoff.put(e); // the loader's contract: this batch failed, the next one follows
                    continue;
                } catch (RuntimeException e) {
                    free.offer(entry);
                    if (closed) {
                        return; // the source went away because we are closing
                    }
                    throw e;
                }
                if (host == null) {
                    free.offer(entry);
                    handoff.end();
                    return;
                }
                if (closed) {
                    host.close();
                    free.offer(entry);
                    return;
                }
                issue(entry, host);
                reap.add(entry); // never full: K entries circulate, the queue holds K + 1
                handoff.put(entry);
            }
        } catch (InterruptedException e) {
            // close() interrupts a copier that waits for a buffer or for the consumer
        } catch (RuntimeException | Error e) {
            handoff.fail(e instanceof RuntimeException r ? r : new IllegalStateException(e));
        }
    }

    private void issue(DeviceEntry entry, Batch host) {
        int n = host.size();
        MemorySegment pixels = host.pixels();
        try {
            if (entry.waitForRelease) {
                // The consumer closed with closeAfter(stream): its reads must finish before we overwrite.
                stream.waitFor(entry.released);
                entry.waitForRelease = false;
            }
            // Labels and indices leave the slot now: the slot goes back to the workers before the consumer is done.
            MemorySegment.copy(host.labels(), 0, entry.labels, 0, 4L * n);
            MemorySegment.copy(host.indices(), 0, entry.indices, 0, 8L * n);
            if (normalize) {
                entry.staging.copyFromHostAsync(0, pixels, stream);
                entry.copied.record(stream);
                kernels.normalize(entry.staging, entry.out, n, geometry.d0(), geometry.d1(), mean, std, stream);
                entry.done.record(stream);
            } else {
                entry.out.copyFromHostAsync(0, pixels, stream);
                entry.copied.record(stream);
            }
        } catch (RuntimeException | Error e) {
            // A copy may have been queued before the failure: the slot is not ours to return until it is done.
            try {
                stream.synchronize();
                host.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed); // keep the slot: the device may still be reading it
            }
            free.offer(entry);
            throw e;
        }
        entry.host = host;
        entry.size = n;
        entry.sequence = host.sequence();
        entry.epoch = host.epoch();
        entry.batchIndex = host.batchIndex();
        entry.lastInEpoch = host.lastInEpoch();
        entry.skipped = host.skipped();
        entry.stats = host.stats();
        entry.owners.set(2);
        int now = onDevice.incrementAndGet();
        maxOnDevice.accumulateAndGet(now, Math::max);
        batches.incrementAndGet();
        bytes.addAndGet(pixels.byteSize());
    }

    // ------------------------------------------------------------------ reaper thread

    private void reapLoop() {
        try {
            context.makeCurrent();
            while (true) {
                DeviceEntry entry = reap.take();
                if (entry.index < 0) {
                    return; // poison from close(), behind every real entry
                }
                entry.copied.synchronize();
                Batch host = entry.host;
                entry.host = null;
                host.close(); // the slot goes back to the workers now, not when the consumer is done
                slotsReturned.incrementAndGet();
                release(entry);
            }
        } catch (InterruptedException e) {
            // closing
        } catch (RuntimeException | Error e) {
            handoff.fail(e instanceof RuntimeException r ? r : new IllegalStateException(e));
        }
    }

    // ------------------------------------------------------------------ accessors

    /** The stage's copy stream: copies and normalisation run on it. */
    public CudaStream stream() {
        return stream;
    }

    /** The retained primary context (the one the CUDA runtime and PyTorch use on this device). */
    public CudaContext context() {
        return context;
    }

    public CudaDriver driver() {
        return driver;
    }

    /** The device pool size K. */
    public int inFlight() {
        return inFlight;
    }

    /** Whether batches are normalised to float32 CHW on the device. */
    public boolean normalizes() {
        return normalize;
    }

    /** Counters so far. */
    public DeviceStageStats stats() {
        return new DeviceStageStats(batches.get(), bytes.get(), slotsReturned.get(), maxOnDevice.get());
    }

    // ------------------------------------------------------------------ shutdown

    /**
     * Stops the copier, waits until every queued copy is done and every host slot returned,
     * invalidates DeviceBatches still open, then frees device buffers, unpins the ring and releases
     * the context. Does not close the loader. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException error = null;
        copier.interrupt();
        Joins.uninterruptibly(copier);
        // Behind every pending entry: the reaper returns all their slots first.
        try {
            reap.put(new DeviceEntry(-1, null, null, null, null, null, null, null));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reaper.interrupt();
        }
        Joins.uninterruptibly(reaper);
        try {
            ensureCurrent();
            stream.synchronize();
            // Only if the reaper died (a failed event wait): its slots are safe to return once the stream is idle.
            for (DeviceEntry e : entries) {
                Batch host = e.host;
                if (host != null) {
                    e.host = null;
                    host.close();
                }
            }
        } catch (RuntimeException e) {
            error = e; // the device may still read those slots: keep them, the loader's close frees the ring
        }
        for (DeviceEntry e : entries) {
            DeviceBatch held = e.handedOut;
            if (held != null) {
                held.invalidate();
            }
        }
        error = resources.closeAll(error);
        if (error != null) {
            throw error;
        }
    }

    /** Options for a {@link DeviceStage}. */
    public static final class Builder extends DeviceOptions<Builder> {
        private final SlotRing ring;
        private final Supplier<Batch> source;
        private TransformSpec spec;
        private float[] mean;
        private float[] std;

        private Builder(SlotRing ring, Supplier<Batch> source) {
            this.ring = ring;
            this.source = source;
        }

        @Override
        Builder self() {
            return this;
        }

        /** Normalise uint8 HWC batches on the device into float32 CHW with these per-channel values. */
        public Builder normalize(float[] mean, float[] std) {
            if (mean.length != 3 || std.length != 3) {
                throw new IllegalArgumentException("mean and std need 3 values (RGB)");
            }
            for (float s : std) {
                if (!(s > 0)) {
                    throw new IllegalArgumentException("std must be positive");
                }
            }
            this.mean = mean.clone();
            this.std = std.clone();
            return this;
        }

        /** Normalise on the device with the loader's own {@link TransformSpec#mean()} and {@link TransformSpec#std()}. */
        public Builder normalizeOnDevice() {
            if (spec == null) {
                throw new IllegalStateException(
                        "no loader transform to take mean and std from; use normalize(mean, std)");
            }
            return normalize(spec.mean(), spec.std());
        }

        /**
         * Opens the stage.
         *
         * @throws DeviceUnavailableException when there is no CUDA driver or no device
         * @throws io.stoke.ffm.cuda.CudaException when the driver refuses a call (the message names it)
         */
        public DeviceStage build() {
            return new DeviceStage(this);
        }
    }
}
