package io.stoke.pack;

/**
 * Hands samples finished in any order by the workers to one writer in source order, with at most
 * {@code capacity} of them in flight: sample {@code t} uses place {@code t % capacity}, which a
 * worker may fill only once the writer has released sample {@code t - capacity}. So memory stays
 * bounded however far ahead the fastest worker is, and the writer never sorts. A failure anywhere
 * wakes every waiter.
 */
final class InOrderQueue {
    private final EncodedSample[] places;
    private long released; // every sample below this has been written
    private Throwable failure;

    InOrderQueue(int capacity, long first) {
        places = new EncodedSample[capacity];
        for (int i = 0; i < capacity; i++) {
            places[i] = new EncodedSample();
        }
        released = first;
    }

    /** The place for sample {@code t}, once the writer is done with the one before it there. */
    synchronized EncodedSample claim(long t) throws InterruptedException {
        while (t >= released + places.length && failure == null) {
            wait();
        }
        check();
        return places[(int) (t % places.length)];
    }

    /** Sample {@code t} is in its place. */
    synchronized void publish(EncodedSample place, long t) {
        place.sample = t;
        notifyAll();
    }

    /** Waits for sample {@code t} (the writer's next). */
    synchronized EncodedSample take(long t) throws InterruptedException {
        EncodedSample place = places[(int) (t % places.length)];
        while (place.sample != t && failure == null) {
            wait();
        }
        check();
        return place;
    }

    /** The writer is done with sample {@code t}: its place may take sample {@code t + capacity}. */
    synchronized void release(EncodedSample place, long t) {
        place.sample = -1;
        released = t + 1;
        notifyAll();
    }

    /** Stops everyone: every wait, now or later, throws with {@code why} as the cause. */
    synchronized void fail(Throwable why) {
        if (failure == null) {
            failure = why;
        }
        notifyAll();
    }

    private void check() {
        if (failure != null) {
            throw new IllegalStateException("pack stopped: " + failure.getMessage(), failure);
        }
    }
}
