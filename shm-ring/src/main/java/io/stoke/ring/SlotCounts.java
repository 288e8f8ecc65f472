package io.stoke.ring;

/**
 * How many of a ring's slots are in each state at one moment: a status view for producers and
 * tools, so that nothing outside the ring reads its state words. A slot is FREE (on the free
 * queue), FILLING (a producer writes it), READY (published, not yet taken) or HELD (a consumer has it).
 *
 * @param free    slots on the free queue
 * @param filling slots the producer is writing
 * @param ready   published batches not yet taken by a consumer
 * @param held    batches a consumer has taken and not released
 * @param unknown slots whose state word holds no known state (only a consumer that wrote over the
 *                shared ring can cause that; counted so that a status line shows it, not hides it)
 */
public record SlotCounts(int free, int filling, int ready, int held, int unknown) {
    /** Slots not free: being filled, waiting, or held. */
    public int inUse() {
        return filling + ready + held;
    }

    /** Whether every published batch has been taken and released. */
    public boolean drained() {
        return ready == 0 && held == 0;
    }
}
