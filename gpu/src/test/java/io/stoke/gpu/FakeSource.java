package io.stoke.gpu;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.loader.Batch;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.SlotRing;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;
import java.util.function.Supplier;
import org.agrona.concurrent.SleepingIdleStrategy;

/**
 * A producer that fills ring slots with known patterns as fast as slots come back (so a slot
 * returned too early is overwritten at once), and the supplier side the stage pulls from. Stands in
 * for the loader's workers without JPEG decoding.
 */
final class FakeSource implements Supplier<Batch>, AutoCloseable {
    final SlotRing ring;
    final RingGeometry g;
    final int total;
    final int lastSize;
    final Thread producer;
    final AtomicLong released = new AtomicLong();
    final ConcurrentHashMap<Integer, Long> slotSequence = new ConcurrentHashMap<>();
    /** Called on every slot release with the batch sequence, before the slot is reusable. */
    volatile LongConsumer onRelease = s -> {};

    final List<Throwable> errors = new CopyOnWriteArrayList<>();
    private long next;
    private volatile boolean stop;

    FakeSource(int slots, int batchSize, int h, int w, int total, int lastSize) {
        this.g = new RingGeometry(slots, batchSize, DTYPE_UINT8, LAYOUT_HWC, h, w, 3);
        this.ring = SlotRing.allocate(g);
        this.total = total;
        this.lastSize = lastSize;
        this.producer = Thread.ofPlatform().name("fake-producer").daemon().start(this::produce);
    }

    static byte pixel(long sequence, long offset) {
        return (byte) (offset * 131 + sequence * 17 + (offset >>> 9));
    }

    static int label(long sequence, int i) {
        return (int) (sequence * 1000 + i);
    }

    int sizeOf(long sequence) {
        return sequence == total - 1 ? lastSize : g.samplesPerSlot();
    }

    /** The uint8 pixels batch {@code sequence} carries. */
    byte[] expected(long sequence) {
        byte[] b = new byte[(int) (sizeOf(sequence) * g.sampleBytes())];
        for (int i = 0; i < b.length; i++) {
            b[i] = pixel(sequence, i);
        }
        return b;
    }

    private void produce() {
        try {
            for (long s = 0; s < total && !stop; s++) {
                int slot = ring.acquire(new SleepingIdleStrategy(50_000), () -> !stop);
                if (slot < 0) {
                    return;
                }
                MemorySegment mem = ring.slot(slot);
                int n = sizeOf(s);
                mem.set(JAVA_LONG, SLOT_SEQUENCE_OFFSET, s);
                mem.set(JAVA_LONG, SLOT_EPOCH_OFFSET, 0);
                mem.set(JAVA_LONG, SLOT_BATCH_INDEX_OFFSET, s);
                mem.set(JAVA_INT, SLOT_SAMPLE_COUNT_OFFSET, n);
                mem.set(JAVA_INT, SLOT_SKIPPED_COUNT_OFFSET, 0);
                mem.set(JAVA_INT, SLOT_FLAGS_OFFSET, s == total - 1 ? SLOT_FLAG_LAST_IN_EPOCH : 0);
                for (int i = 0; i < n; i++) {
                    mem.set(JAVA_INT, g.slotLabelsOffset() + 4L * i, label(s, i));
                    mem.set(JAVA_LONG, g.slotIndicesOffset() + 8L * i, s * 100 + i);
                    mem.set(JAVA_INT, g.slotStatusOffset() + 4L * i, 0);
                }
                MemorySegment px = ring.pixels(slot);
                // Overwrite the whole pixel area, so a premature reuse always changes copied bytes.
                for (long o = 0; o < px.byteSize(); o++) {
                    px.set(JAVA_BYTE, o, pixel(s, o));
                }
                slotSequence.put(slot, s);
                ring.publish(slot);
            }
        } catch (Throwable t) {
            errors.add(t);
        }
    }

    @Override
    public Batch get() {
        if (next >= total) {
            return null;
        }
        int slot;
        while ((slot = ring.pollReady()) < 0) {
            if (Thread.currentThread().isInterrupted() || ring.isClosed()) {
                throw new IllegalStateException("source interrupted");
            }
            LockSupport.parkNanos(50_000); // no busy spin: the machine running the tests may have 2 cores
        }
        next++;
        return Batch.ofSlot(ring, slot, this::release);
    }

    private void release(int slot) {
        onRelease.accept(slotSequence.get(slot));
        released.incrementAndGet();
        ring.release(slot);
    }

    @Override
    public void close() {
        stop = true;
        try {
            producer.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        ring.close();
    }
}
