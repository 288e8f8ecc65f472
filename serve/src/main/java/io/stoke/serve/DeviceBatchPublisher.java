package io.stoke.serve;

import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.gpu.DeviceBatch;
import io.stoke.gpu.GpuDecodeStage;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.internal.Joins;
import io.stoke.ring.SlotBody;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

/**
 * The ring's producer under {@code --decode gpu|auto}: takes the GPU decode stage's batches in order
 * and fills a free slot with each, as the loader's workers and publisher do under {@code --decode
 * cpu}, so a consumer in another process reads the same layout either way. The pixels arrive by one
 * device-to-host copy into the slot (the ring's mapping page-locked for the stage's context), where
 * the consumer reads them; labels, indices and each sample's status are written beside them, then
 * the header, then the slot is published. After the last batch the stream ends; an epoch in which
 * nothing decoded fails the producer, after its batches, as the loader does.
 *
 * <p>The stage runs under {@code SKIP} whatever the policy, so that a batch with a bad file still
 * comes out: under {@code FAIL} it is published marked failed, its bad samples zeroed with their
 * status, which is what the loader publishes.
 *
 * <p>With device slots ({@code --device-slots-out}), the pixels stay on the GPU: each ring slot has
 * a device allocation of its own, which the consumer opens once by CUDA IPC, and a batch is copied
 * there (device to device) instead of into the slot; the host slot carries the rest, and its
 * publish comes after the copy is done. The allocations are the stage's, freed when it closes.
 *
 * <p>Ownership: one thread, this publisher's own, acquires, fills and publishes slots (the only
 * writer of their contents and of the ring's published count); the consumer releases them. The
 * stage is the caller's, closed after this publisher.
 */
final class DeviceBatchPublisher implements AutoCloseable {
    private final GpuDecodeStage stage;
    private final SlotRing slots;
    private final boolean skipErrors;
    private final long firstSequence;
    private final long sampleBytes;
    private final Thread thread;
    // The publisher thread's:
    private final SlotHeader header = new SlotHeader();
    private final SlotBody body;
    private final MemorySegment[] slotMemory;
    private final DeviceBuffer[] deviceSlots; // null: the pixels go into the ring
    private final CudaEvent copied; // with device slots: a batch's copy into its slot is done
    // Read by the server's loop:
    private volatile long published;
    private volatile boolean finished;
    private volatile Throwable failure;
    private volatile boolean running = true;
    private final BooleanSupplier keepWaiting = () -> running; // one object, not one per acquire

    /**
     * Starts publishing {@code stage}'s batches into {@code slots}.
     *
     * @param skipErrors the user's policy: SKIP records bad samples, FAIL marks their batch failed
     * @param firstSequence the first batch's sequence number (the start batch, as the loader numbers)
     * @param deviceSlotsOut where to describe the device slots (null: the pixels go into the ring)
     */
    DeviceBatchPublisher(
            GpuDecodeStage stage, SlotRing slots, boolean skipErrors, long firstSequence, Path deviceSlotsOut) {
        this.stage = stage;
        this.slots = slots;
        this.skipErrors = skipErrors;
        this.firstSequence = firstSequence;
        this.sampleBytes = slots.geometry().sampleBytes();
        this.body = new SlotBody(slots.geometry());
        this.slotMemory = new MemorySegment[slots.geometry().slotCount()];
        for (int s = 0; s < slotMemory.length; s++) {
            slotMemory[s] = slots.slot(s);
        }
        if (deviceSlotsOut == null) {
            this.deviceSlots = null;
            this.copied = null;
            stage.pinHost(slots.memory()); // one registration of the whole mapping: every slot's copy at full rate
        } else {
            long bytes = slots.geometry().samplesPerSlot() * sampleBytes;
            this.deviceSlots = new DeviceBuffer[slotMemory.length];
            List<byte[]> handles = new ArrayList<>(slotMemory.length);
            for (int s = 0; s < deviceSlots.length; s++) {
                deviceSlots[s] = stage.deviceBuffer(bytes);
                handles.add(deviceSlots[s].ipcHandle());
            }
            this.copied = stage.event();
            // Before the first publish: a consumer reads it when it sees its first batch.
            DeviceSlotsFile.of(stage.context().device(), bytes, handles).write(deviceSlotsOut);
        }
        this.thread = Thread.ofPlatform().name("stoke-gpu-publisher").daemon().start(this::run);
    }

    private void run() {
        IdleStrategy idle =
                new BackoffIdleStrategy(100, 10, TimeUnit.MICROSECONDS.toNanos(1), TimeUnit.MICROSECONDS.toNanos(200));
        try {
            for (DeviceBatch next = stage.next(); next != null && running; next = stage.next()) {
                try (DeviceBatch batch = next) {
                    int slot = slots.acquire(idle, keepWaiting);
                    if (slot < 0) {
                        return; // closing
                    }
                    fill(slot, batch);
                    slots.publish(slot);
                    published++;
                    // For consumers in other processes and status lines (consumer lag).
                    slots.ringState().published(published);
                }
            }
            if (running) {
                finished = true;
                slots.ringState().endStream(); // a release after the last publish
            }
        } catch (NoSampleDecodedException e) {
            failure = e;
            slots.ringState().failProducer(); // after every batch before it was published
        } catch (RuntimeException | Error e) {
            if (running) {
                failure = e;
                slots.ringState().failProducer();
            }
        }
    }

    private void fill(int slot, DeviceBatch batch) {
        MemorySegment memory = slotMemory[slot];
        body.wrap(memory);
        int n = batch.size();
        // Each returns once the pixels are there: the publish below hands them on.
        if (deviceSlots != null) {
            batch.copyToDevice(deviceSlots[slot], copied);
        } else {
            batch.copyToHost(body.pixels());
        }
        for (int i = 0; i < n; i++) {
            body.putLabel(i, batch.label(i)).putIndex(i, batch.index(i)).putStatus(i, SampleStatus.OK.code());
        }
        List<SampleError> errors = batch.skipped(); // zeroed by the stage
        for (SampleError e : errors) {
            body.putStatus(e.position(), e.status().code());
        }
        // Plain writes: the publish is the release that hands them to the consumer.
        header.wrap(memory)
                .sequence(firstSequence + batch.sequence())
                .epoch(batch.epoch())
                .batchIndex(batch.batchIndex())
                .sampleCount(n)
                .skippedCount(errors.size())
                .pixelBytes(n * sampleBytes)
                .decodeNanos(batch.stats().decodeNanos())
                .sourceBytes(batch.stats().sourceBytes())
                .flags(SlotHeader.flags(!errors.isEmpty() && !skipErrors, batch.lastInEpoch()));
    }

    /** Batches published so far. */
    long published() {
        return published;
    }

    /** Whether every batch is published and the stream ended. */
    boolean finished() {
        return finished;
    }

    /** Why publishing stopped early: a {@link NoSampleDecodedException}, or the stage's failure; null otherwise. */
    Throwable failure() {
        return failure;
    }

    /** Stops the thread (a slot it waits for, or the stage's next batch) and waits for it. */
    @Override
    public void close() {
        running = false;
        thread.interrupt();
        Joins.uninterruptibly(thread);
    }
}
