package io.stoke.cli.harness;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingLayout;
import io.stoke.ring.SlotRing;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

/**
 * A deliberately simple Stoke-side source for the preprocessed dataset: worker threads read whole
 * {@code .raw} files into the pixel area of {@link SlotRing} slots, one batch per worker at a time,
 * published in batch order. It has none of the loader's per-sample scheduling (the first batch
 * waits for one worker to read all of it, as in PyTorch), so it measures reading bytes into a
 * ring, not Stoke's JPEG pipeline.
 */
public final class RawTensorLoader implements AutoCloseable {
    private final List<Path> files;
    private final int[] labels;
    private final int batchSize;
    private final int batches;
    private final SlotRing ring;
    private final List<Thread> threads = new ArrayList<>();
    private final Object acquireLock = new Object();
    private final int[] filled;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final IdleStrategy consumerIdle = new BackoffIdleStrategy();
    private int nextBatch;
    private int nextPublish;
    private int delivered;
    private volatile boolean closed;

    /** Starts {@code workers} threads over {@code files} (labels alongside) with {@code slots} slots. */
    public RawTensorLoader(List<Path> files, int[] labels, int batchSize, int workers, int slots) {
        this.files = files;
        this.labels = labels;
        this.batchSize = batchSize;
        this.batches = (files.size() + batchSize - 1) / batchSize;
        this.filled = new int[batches];
        java.util.Arrays.fill(filled, -1);
        ring = SlotRing.allocate(new RingGeometry(slots, batchSize, RingLayout.DTYPE_UINT8, RingLayout.LAYOUT_HWC,
                RawTensors.SIDE, RawTensors.SIDE, 3));
        for (int w = 0; w < workers; w++) {
            threads.add(Thread.ofPlatform().name("stoke-raw-" + w).start(this::work));
        }
    }

    private void work() {
        IdleStrategy idle = new BackoffIdleStrategy();
        try {
            while (!closed) {
                int k;
                int slot;
                // Slots are taken in batch order, or a worker holding a late batch's slot could
                // wait forever behind an early batch that has no slot.
                synchronized (acquireLock) {
                    if (nextBatch >= batches) {
                        return;
                    }
                    slot = ring.acquire(idle, () -> !closed);
                    if (slot < 0) {
                        return;
                    }
                    k = nextBatch++;
                }
                fill(k, slot);
                synchronized (filled) {
                    filled[k] = slot;
                    while (nextPublish < batches && filled[nextPublish] >= 0) {
                        ring.publish(filled[nextPublish++]);
                    }
                }
            }
        } catch (Throwable e) {
            failure.compareAndSet(null, e);
        }
    }

    private void fill(int k, int slot) throws IOException {
        MemorySegment pixels = ring.pixels(slot);
        MemorySegment header = ring.slot(slot);
        int first = k * batchSize;
        int n = Math.min(batchSize, files.size() - first);
        for (int i = 0; i < n; i++) {
            ByteBuffer buf = pixels.asSlice(i * RawTensors.SAMPLE_BYTES, RawTensors.SAMPLE_BYTES).asByteBuffer();
            try (FileChannel ch = FileChannel.open(files.get(first + i), StandardOpenOption.READ)) {
                while (buf.hasRemaining()) {
                    if (ch.read(buf) < 0) {
                        throw new IOException("short file " + files.get(first + i));
                    }
                }
            }
            header.set(JAVA_INT, ring.geometry().slotLabelsOffset() + 4L * i, labels[first + i]);
        }
    }

    /** Number of samples in batch {@code k}. */
    public int size(int k) {
        return Math.min(batchSize, files.size() - k * batchSize);
    }

    /** The next batch's slot, waiting for it; -1 after the last batch. */
    public int next() {
        if (delivered >= batches) {
            return -1;
        }
        consumerIdle.reset();
        while (true) {
            Throwable f = failure.get();
            if (f != null) {
                throw new IllegalStateException("a reader thread failed: " + f, f);
            }
            int slot = ring.pollReady();
            if (slot >= 0) {
                delivered++;
                return slot;
            }
            consumerIdle.idle();
        }
    }

    /** The pixels of a delivered slot. */
    public MemorySegment pixels(int slot) {
        return ring.pixels(slot);
    }

    /** Gives a delivered slot back to the readers. */
    public void release(int slot) {
        ring.release(slot);
    }

    @Override
    public void close() {
        closed = true;
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        ring.close();
    }
}
