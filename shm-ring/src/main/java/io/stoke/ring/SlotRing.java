package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * Fixed-size batch slots in one off-heap segment, with a free queue and a ready queue of slot
 * numbers. A slot moves free -> (producer fills it) -> ready -> (consumer reads it) -> free; at
 * every moment exactly one side owns it, and the queues are the only hand-over points. Each slot's
 * header records its state ({@link RingLayout#SLOT_STATE_OFFSET}) so that the slots of a consumer
 * that died can be reclaimed ({@link #reclaimFromConsumer()}).
 *
 * <p>{@link #acquire} blocks while no slot is free: that is the backpressure that keeps memory
 * bounded. Both queues are Agrona one-to-one ring buffers; where several threads of this process
 * may write or read one queue, this class serialises them (once per batch, never per sample).
 *
 * <p>The queues are Agrona ring buffers over raw addresses. {@link #close()} waits for every queue
 * call in progress and refuses new ones, so no thread can touch the queues after the memory is
 * gone; slot contents are read through {@link MemorySegment}s, which throw once the arena closes.
 */
public final class SlotRing implements AutoCloseable {
    private final RingGeometry geometry;
    private final Arena arena;
    private final MemorySegment memory;
    private final SlotQueue readyQueue;
    private final SlotQueue freeQueue;
    private final RingState ringState;
    private final SlotHeader[] headers;
    private final AtomicInteger callsInProgress = new AtomicInteger();
    private volatile boolean closed;

    private SlotRing(RingGeometry geometry, Arena arena, MemorySegment memory, boolean initialise) {
        this.geometry = geometry;
        this.arena = arena;
        this.memory = memory;
        if (memory.byteSize() < geometry.totalLength()) {
            throw new IllegalArgumentException(
                    "ring memory holds " + memory.byteSize() + " bytes, geometry needs " + geometry.totalLength());
        }
        if ((memory.address() & 7) != 0) {
            throw new IllegalArgumentException("ring memory must be 8-byte aligned");
        }
        if (initialise) {
            writeHeader();
        }
        ringState = new RingState(memory);
        headers = new SlotHeader[geometry.slotCount()];
        for (int s = 0; s < headers.length; s++) {
            headers[s] = new SlotHeader().wrap(slot(s));
        }
        readyQueue = new SlotQueue(
                new OneToOneRingBuffer(
                        new UnsafeBuffer(memory.address() + geometry.readyQueueOffset(), geometry.queueLength())),
                geometry.slotCount());
        freeQueue = new SlotQueue(
                new OneToOneRingBuffer(
                        new UnsafeBuffer(memory.address() + geometry.freeQueueOffset(), geometry.queueLength())),
                geometry.slotCount());
        if (initialise) {
            for (int slot = 0; slot < geometry.slotCount(); slot++) {
                setState(slot, SLOT_STATE_FREE);
                offer(freeQueue, slot);
            }
        }
    }
    /** A ring in anonymous off-heap memory, owned by this object, every slot free. */
    public static SlotRing allocate(RingGeometry geometry) {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment memory = arena.allocate(geometry.totalLength(), PAGE);
            return new SlotRing(geometry, arena, memory, true);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * A ring laid over memory that the caller mapped (a {@code /dev/shm} file). When {@code
     * initialise} is set, the header is written and every slot put on the free queue; otherwise
     * the memory must hold a ring with this geometry already. Closing the ring closes {@code arena}.
     */
    public static SlotRing over(RingGeometry geometry, Arena arena, MemorySegment memory, boolean initialise) {
        return new SlotRing(geometry, arena, memory, initialise);
    }

    private void writeHeader() {
        RingGeometry g = geometry;
        memory.asSlice(0, g.slotsOffset()).fill((byte) 0);
        memory.set(JAVA_INT, VERSION_OFFSET, VERSION);
        memory.set(JAVA_INT, HEADER_LENGTH_OFFSET, HEADER_LENGTH);
        memory.set(JAVA_LONG, TOTAL_LENGTH_OFFSET, g.totalLength());
        memory.set(JAVA_INT, SLOT_COUNT_OFFSET, g.slotCount());
        memory.set(JAVA_INT, SAMPLES_PER_SLOT_OFFSET, g.samplesPerSlot());
        memory.set(JAVA_LONG, SLOT_STRIDE_OFFSET, g.slotStride());
        memory.set(JAVA_LONG, SAMPLE_BYTES_OFFSET, g.sampleBytes());
        memory.set(JAVA_INT, DTYPE_OFFSET, g.dtype());
        memory.set(JAVA_INT, DIM_LAYOUT_OFFSET, g.dimLayout());
        memory.set(JAVA_INT, SHAPE_OFFSET, g.d0());
        memory.set(JAVA_INT, SHAPE_OFFSET + 4, g.d1());
        memory.set(JAVA_INT, SHAPE_OFFSET + 8, g.d2());
        memory.set(JAVA_INT, LABEL_TYPE_OFFSET, LABEL_INT32);
        memory.set(JAVA_LONG, READY_QUEUE_OFFSET_OFFSET, g.readyQueueOffset());
        memory.set(JAVA_LONG, FREE_QUEUE_OFFSET_OFFSET, g.freeQueueOffset());
        memory.set(JAVA_INT, QUEUE_LENGTH_OFFSET, g.queueLength());
        memory.set(JAVA_INT, SLOT_LABELS_OFFSET_OFFSET, g.slotLabelsOffset());
        memory.set(JAVA_LONG, SLOTS_OFFSET_OFFSET, g.slotsOffset());
        memory.set(JAVA_INT, SLOT_INDICES_OFFSET_OFFSET, g.slotIndicesOffset());
        memory.set(JAVA_INT, SLOT_STATUS_OFFSET_OFFSET, g.slotStatusOffset());
        memory.set(JAVA_INT, SLOT_PIXELS_OFFSET_OFFSET, g.slotPixelsOffset());
        memory.set(JAVA_INT, STATE_OFFSET, STATE_RUNNING);
        // Magic last: a reader that sees it sees a complete header.
        VarHandle.releaseFence();
        memory.set(JAVA_LONG, MAGIC_OFFSET, MAGIC);
    }

    /** The ring header's live words: stream state, liveness, counters. */
    public RingState ringState() {
        return ringState;
    }

    public RingGeometry geometry() {
        return geometry;
    }

    /** The whole ring, header included. */
    public MemorySegment memory() {
        return memory;
    }

    /** Slot {@code slot}'s bytes: header, labels, indices, status, pixels. */
    public MemorySegment slot(int slot) {
        return memory.asSlice(geometry.slotsOffset() + geometry.slotStride() * slot, geometry.slotStride());
    }

    /** The pixel area of a slot: {@code samplesPerSlot * sampleBytes} bytes, page-aligned. */
    public MemorySegment pixels(int slot) {
        return memory.asSlice(
                geometry.slotsOffset() + geometry.slotStride() * slot + geometry.slotPixelsOffset(),
                geometry.sampleBytes() * geometry.samplesPerSlot());
    }

    /**
     * Takes a free slot, waiting with {@code idle} while none is free.
     *
     * @return the slot, or -1 when {@code keepWaiting} turned false or the ring closed
     */
    public int acquire(IdleStrategy idle, BooleanSupplier keepWaiting) {
        idle.reset();
        while (true) {
            int slot = poll(freeQueue, SLOT_STATE_FILLING);
            if (slot >= 0) {
                return slot;
            }
            if (closed || !keepWaiting.getAsBoolean()) {
                return -1;
            }
            idle.idle();
        }
    }

    /** Hands a filled slot to the consumer side. Only one thread may publish at a time. */
    public void publish(int slot) {
        checkSlot(slot);
        boolean offered;
        synchronized (readyQueue.writeLock) {
            // READY and the offer under one lock: a reclaim sees both or neither.
            setState(slot, SLOT_STATE_READY);
            offered = offer(readyQueue, slot);
        }
        if (!offered) {
            throw new IllegalStateException("ready queue full: a slot was published twice");
        }
    }

    /** The next ready slot, or -1 when none is ready. Only one thread may poll at a time. */
    public int pollReady() {
        return poll(readyQueue, SLOT_STATE_HELD);
    }

    /** Returns a slot to the producers. Any thread may release; after {@link #close()} it does nothing. */
    public void release(int slot) {
        checkSlot(slot);
        if (!tryEnter()) {
            return; // the ring is gone, and its slots with it
        }
        boolean offered;
        try {
            synchronized (freeQueue.writeLock) {
                // FREE before the offer: once offered the producer may take it and write FILLING.
                setState(slot, SLOT_STATE_FREE);
                offered = freeQueue.offer(slot);
            }
        } finally {
            callsInProgress.decrementAndGet();
        }
        if (!offered) {
            throw new IllegalStateException("free queue full: a slot was released twice");
        }
    }

    /** Whether {@link #close()} has begun. */
    public boolean isClosed() {
        return closed;
    }

    private void checkSlot(int slot) {
        if (slot < 0 || slot >= geometry.slotCount()) {
            throw new IndexOutOfBoundsException("slot " + slot + " of " + geometry.slotCount());
        }
    }

    private boolean offer(SlotQueue queue, int slot) {
        enter();
        try {
            return queue.offer(slot);
        } finally {
            callsInProgress.decrementAndGet();
        }
    }

    private int poll(SlotQueue queue, int newState) {
        if (!tryEnter()) {
            return -1;
        }
        try {
            synchronized (queue.readLock) {
                int slot = queue.poll();
                if (slot >= 0) {
                    // Under the read lock: a reclaim that holds it sees either the slot on the queue
                    // or its new state, never neither.
                    setState(slot, newState);
                }
                return slot;
            }
        } finally {
            callsInProgress.decrementAndGet();
        }
    }

    /** Slot {@code slot}'s state, one of {@link RingLayout}'s {@code SLOT_STATE_*}. */
    public int state(int slot) {
        checkSlot(slot);
        return headers[slot].state();
    }

    /**
     * How many slots are ready now, published and not yet taken by the consumer: how far the
     * producers are ahead of it. Each slot's state is read once (a volatile read); nothing is
     * allocated, so a producer may ask on its hot path.
     */
    public int readySlots() {
        int ready = 0;
        for (SlotHeader header : headers) {
            if (header.state() == SLOT_STATE_READY) {
                ready++;
            }
        }
        return ready;
    }

    /** How many slots are in each state now (for status lines); each slot's state is read once. */
    public SlotCounts counts() {
        int free = 0;
        int filling = 0;
        int ready = 0;
        int held = 0;
        int unknown = 0;
        for (int s = 0; s < geometry.slotCount(); s++) {
            switch (state(s)) {
                case SLOT_STATE_FREE -> free++;
                case SLOT_STATE_FILLING -> filling++;
                case SLOT_STATE_READY -> ready++;
                case SLOT_STATE_HELD -> held++;
                default -> unknown++;
            }
        }
        return new SlotCounts(free, filling, ready, held, unknown);
    }

    private void setState(int slot, int state) {
        headers[slot].state(state);
    }

    /**
     * Takes back every slot from a consumer that is gone: slots it held and slots still waiting on
     * the ready queue go back on the ready queue in batch order (by slot sequence), so the next
     * consumer receives the held ones again; slots it had released stay free. Call only when no
     * consumer can touch the queues (its process is gone or it detached), and only from the
     * producer's side; workers may go on filling and publishing meanwhile.
     *
     * @return how many slots were handed out but not released (the re-delivered batches)
     */
    public int reclaimFromConsumer() {
        enter();
        try {
            synchronized (readyQueue.writeLock) { // no publish meanwhile
                synchronized (readyQueue.readLock) {
                    synchronized (freeQueue.readLock) { // no worker takes a slot meanwhile
                        synchronized (freeQueue.writeLock) {
                            return reclaimLocked();
                        }
                    }
                }
            }
        } finally {
            callsInProgress.decrementAndGet();
        }
    }

    private int reclaimLocked() {
        // Start both queues afresh: the states say where every slot belongs, and a consumer that
        // died inside an offer may have left a claimed record that would block the queue forever.
        readyQueue.reset();
        freeQueue.reset();
        int slots = geometry.slotCount();
        long[] ready = new long[slots];
        int readyCount = 0;
        int held = 0;
        for (int s = 0; s < slots; s++) {
            int st = state(s);
            if (st == SLOT_STATE_FREE) {
                freeQueue.offer(s);
            } else if (st == SLOT_STATE_READY || st == SLOT_STATE_HELD) {
                if (st == SLOT_STATE_HELD) {
                    held++;
                }
                long sequence = headers[s].sequence();
                ready[readyCount++] = sequence * (1L << 17) + s; // sort key: sequence, then slot
            }
        }
        Arrays.sort(ready, 0, readyCount);
        for (int i = 0; i < readyCount; i++) {
            int s = (int) (ready[i] & ((1L << 17) - 1));
            setState(s, SLOT_STATE_READY);
            readyQueue.offer(s);
        }
        ringState.addRedelivered(held);
        return held;
    }

    /**
     * One Agrona ring buffer of slot numbers. Agrona's one-to-one buffers allow one reader and
     * one writer; several threads of this process may take or give slots at once, so reads and
     * writes are each serialised here.
     */
    private static final class SlotQueue {
        private final RingBuffer buffer;
        private final int slotCount;
        final Object readLock = new Object();
        final Object writeLock = new Object();
        private final MessageHandler handler = (type, buf, index, length) -> this.polled = buf.getInt(index);
        private int polled;

        SlotQueue(RingBuffer buffer, int slotCount) {
            this.buffer = buffer;
            this.slotCount = slotCount;
        }

        boolean offer(int slot) {
            synchronized (writeLock) {
                int index = buffer.tryClaim(MSG_SLOT, Integer.BYTES);
                if (index < 0) {
                    return false;
                }
                buffer.buffer().putInt(index, slot);
                buffer.commit(index);
                return true;
            }
        }

        int poll() {
            synchronized (readLock) {
                polled = -1;
                buffer.read(handler, 1);
                int slot = polled;
                if (slot != -1 && (slot < 0 || slot >= slotCount)) {
                    // Another process wrote this queue: never trust a slot number from it.
                    throw new IllegalStateException("queue holds slot number " + slot + ", ring has " + slotCount);
                }
                return slot;
            }
        }

        /** Empties the queue: zero records and positions. Only with both locks held and no other process at it. */
        void reset() {
            buffer.buffer().setMemory(0, buffer.capacity() + RingBufferDescriptor.TRAILER_LENGTH, (byte) 0);
        }
    }

    private void enter() {
        if (!tryEnter()) {
            throw new IllegalStateException("ring is closed");
        }
    }

    private boolean tryEnter() {
        callsInProgress.incrementAndGet();
        if (closed) {
            callsInProgress.decrementAndGet();
            return false;
        }
        return true;
    }

    /** Refuses new queue calls, waits for those in progress, then frees the memory. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        while (callsInProgress.get() != 0) {
            Thread.onSpinWait();
        }
        arena.close();
    }
}
