package io.stoke.tune;

import io.stoke.loader.Loader;

/** The user's loader (dataset, transform, every option) at one batch size and number of workers. */
@FunctionalInterface
public interface LoaderFactory {
    /** A builder for a loader that runs until it is closed (epochs 0), as tune stops it by time. */
    Loader.Builder builder(int batchSize, int workers);
}
