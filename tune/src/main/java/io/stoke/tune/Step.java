package io.stoke.tune;

import io.stoke.loader.Batch;

/**
 * What the consumer does with each batch while tune measures: the training or inference step
 * that the loader has to keep fed. Its cost per batch size is the other half of the cost model.
 */
public interface Step extends AutoCloseable {
    /** Runs the step on {@code batch}, which stays open until it returns. */
    void run(Batch batch) throws Exception;

    /**
     * What the step costs at {@code batchSize}, with the loader idle: {@code loader} hands out one
     * batch of that size from a ring of one slot, so no worker decodes while it is timed.
     */
    StepCost cost(int batchSize, BatchSupplier loader, double budgetSeconds) throws Exception;

    /** One line for the table's title and the JSON. */
    String describe();

    /** Frees what the step holds (a model's session); a sleep holds nothing. */
    @Override
    default void close() {}

    /** One batch of a given size from a loader that decodes nothing more while the batch is held. */
    @FunctionalInterface
    interface BatchSupplier {
        /** Opens a loader with one slot, takes its first batch, runs {@code use} on it, closes both. */
        StepCost withOneBatch(int batchSize, BatchUse use) throws Exception;
    }

    /** What a step's probe does with the one batch it holds. */
    @FunctionalInterface
    interface BatchUse {
        StepCost apply(Batch batch) throws Exception;
    }

    /**
     * One step's cost.
     *
     * @param batchSize  images per batch
     * @param seconds    wall time per batch
     * @param modelCores the cores the step keeps busy while it runs (process CPU time over wall time
     *     during the step; 0 for a sleep): on a CPU-only machine it takes them from the workers
     * @param measured   false when computed (a sleep's length), true when timed
     */
    record StepCost(int batchSize, double seconds, double modelCores, boolean measured) {}
}
