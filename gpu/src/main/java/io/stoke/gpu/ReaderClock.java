package io.stoke.gpu;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The reader threads' {@link ReaderTimes} as they add them: once per task (one thread's reads of one
 * batch), so the threads meet here a few times a batch, not per file.
 */
final class ReaderClock {
    private final AtomicLong images = new AtomicLong();
    private final AtomicLong read = new AtomicLong();
    private final AtomicLong examine = new AtomicLong();
    private final AtomicLong tables = new AtomicLong();

    /** Adds one task's files and wall times, in nanoseconds. */
    void add(long files, long readNanos, long examineNanos, long tablesNanos) {
        images.addAndGet(files);
        read.addAndGet(readNanos);
        examine.addAndGet(examineNanos);
        tables.addAndGet(tablesNanos);
    }

    /** The sums so far. */
    ReaderTimes times() {
        return new ReaderTimes(images.get(), read.get(), examine.get(), tables.get());
    }
}
