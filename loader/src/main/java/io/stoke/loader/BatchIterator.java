package io.stoke.loader;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Supplier;

/** Iterates a source of batches that returns null at the end: what Loader and RingConsumer share. */
final class BatchIterator implements Iterator<Batch> {
    private final Supplier<Batch> source;
    private Batch ahead;

    BatchIterator(Supplier<Batch> source) {
        this.source = source;
    }

    @Override
    public boolean hasNext() {
        if (ahead == null) {
            ahead = source.get();
        }
        return ahead != null;
    }

    @Override
    public Batch next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        Batch b = ahead;
        ahead = null;
        return b;
    }
}
