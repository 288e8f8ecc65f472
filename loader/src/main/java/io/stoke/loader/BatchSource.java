package io.stoke.loader;

/**
 * Where a consumer takes its batches from: a {@link Loader}, a {@link RingConsumer}, or the GPU
 * stage over a loader.
 *
 * @param <B> the kind of batch handed out
 */
public interface BatchSource<B extends BatchView> {
    /**
     * The next batch, which the caller closes, or null at the end of the last epoch. Blocks
     * until one is ready.
     */
    B next();
}
