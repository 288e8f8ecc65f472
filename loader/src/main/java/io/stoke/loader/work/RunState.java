package io.stoke.loader.work;

/**
 * Whether a pipeline still runs, and why it stopped: written by the workers (a worker that dies),
 * the publisher (an epoch that decoded nothing) and {@link Pipeline#close}; read by all of them and
 * by the consumer. Plain volatile fields, read directly on the workers' path like the pipeline's
 * own were.
 */
final class RunState {
    volatile boolean running = true;
    /** The first failure: a worker's exception, or the publisher's {@code NoSampleDecodedException}. */
    volatile Throwable failure;
    /**
     * Batches the consumer gets before the failure is thrown to it: the schedule's total, or fewer
     * once an epoch decoded nothing. Written before {@link #failure}, so a consumer that sees the
     * failure sees this too.
     */
    volatile long deliverable;

    RunState(long totalBatches) {
        this.deliverable = totalBatches;
    }

    /** Keeps the first failure; later ones are consequences of it. */
    void fail(Throwable t) {
        if (failure == null) {
            failure = t;
        }
    }

    /**
     * Ends the stream after batch {@code lastSequence}: the consumer gets it and those before, then
     * {@code cause}; workers stop, and what they fill past it is never published.
     */
    void failAfter(long lastSequence, Throwable cause) {
        if (failure == null) {
            deliverable = lastSequence + 1;
            failure = cause;
            running = false;
        }
    }
}
