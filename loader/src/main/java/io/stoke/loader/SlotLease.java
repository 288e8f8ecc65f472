package io.stoke.loader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.IntConsumer;

/**
 * A consumer's hold on one slot, or on a buffer filled from one: which slot, who gets it back, and
 * the arena every view handed out of it belongs to. {@link #giveBack} invalidates the views first
 * (any access through a stale one then throws {@link IllegalStateException}, so it can never read a
 * slot that the producer is refilling, nor memory that was freed), then hands the slot to its owner,
 * once: a second call, or one after {@link #abandon}, does nothing. The batch types that hold a
 * lease ({@code Batch}, {@code DeviceBatch}) close through it.
 */
public final class SlotLease {
    private final int slot;
    private final IntConsumer owner;
    private final Arena arena = Arena.ofShared();
    // Written under this lease's lock, read without it by accessors that only check it.
    private volatile boolean closed;

    /** Holds {@code slot} until {@link #giveBack}, which passes it to {@code owner} (e.g. {@code ring::release}). */
    public SlotLease(int slot, IntConsumer owner) {
        this.slot = slot;
        this.owner = owner;
    }

    public int slot() {
        return slot;
    }

    /** {@code memory}, valid until this lease is given back or abandoned. */
    public MemorySegment view(MemorySegment memory) {
        return memory.reinterpret(arena, null);
    }

    public boolean isClosed() {
        return closed;
    }

    /**
     * Invalidates every view, then gives the slot to its owner; at most once.
     *
     * @return whether this call gave it back
     */
    public synchronized boolean giveBack() {
        if (!invalidate()) {
            return false;
        }
        owner.accept(slot);
        return true;
    }

    /**
     * Invalidates every view without giving the slot back: its owner is going away, or the slot
     * was never handed out.
     *
     * @return whether this call closed the lease
     */
    public synchronized boolean abandon() {
        return invalidate();
    }

    private boolean invalidate() {
        if (closed) {
            return false;
        }
        closed = true;
        arena.close();
        return true;
    }
}
