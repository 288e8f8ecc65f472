package io.stoke.gpu;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.PinnedHostMemory;

/**
 * Two pinned host stagings that batches take in turn, for a step whose jobs go to the device by an
 * asynchronous copy ({@link DeviceResize}, {@link PlanesToRgb}): a staging is rewritten only after the
 * copies out of it of the batch that last used it are done (an event each), so a batch is staged
 * while the device still works on the one before, whose copy is queued behind that work.
 *
 * <p>Owner: the step's one thread, with the context current. It owns the stagings and the events.
 */
final class StagingTurns implements AutoCloseable {
    /** Per staging: rung once the copies out of it of the batch that last used it are done. */
    private final CudaEvent[] copied = new CudaEvent[2];

    private final boolean[] copyPending = new boolean[2];
    private final PinnedHostMemory[] stagings = new PinnedHostMemory[2];
    /** The side this batch stages on; the next batch takes the other. */
    private int side = 1;

    /** Two events, and two stagings of {@code bytes} each (none where 0: the step allocates them, {@link #replace}). */
    StagingTurns(CudaDriver driver, long bytes) {
        try {
            copied[0] = CudaEvent.create(driver);
            copied[1] = CudaEvent.create(driver);
            if (bytes > 0) {
                stagings[0] = PinnedHostMemory.allocate(driver, bytes);
                stagings[1] = PinnedHostMemory.allocate(driver, bytes);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /**
     * Starts a batch on the other staging, once the copies of the batch before the last out of it are
     * done (long since, normally: the last batch's may not be); returns it, null where none was made yet.
     */
    PinnedHostMemory begin() {
        side ^= 1;
        if (copyPending[side]) {
            copied[side].synchronize();
            copyPending[side] = false;
        }
        return stagings[side];
    }

    /** Puts {@code bigger} in this batch's staging's place, closing the one it replaces (whose copies are done). */
    void replace(PinnedHostMemory bigger) {
        if (stagings[side] != null) {
            stagings[side].close();
        }
        stagings[side] = bigger;
    }

    /** Records on {@code stream}, after this batch's copies out of its staging were queued there. */
    void copiesQueued(CudaStream stream) {
        copied[side].record(stream);
        copyPending[side] = true;
    }

    /** Waits for every copy still out of the stagings, then frees them and the events. */
    @Override
    public void close() {
        for (int k = 0; k < 2; k++) {
            if (copied[k] != null) {
                if (copyPending[k]) {
                    copied[k].synchronize();
                }
                copied[k].close();
                copied[k] = null;
            }
            if (stagings[k] != null) {
                stagings[k].close();
                stagings[k] = null;
            }
        }
    }
}
