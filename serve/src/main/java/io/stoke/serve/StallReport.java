package io.stoke.serve;

import io.stoke.ring.SlotCounts;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Says, once a stall, that a ring's producer has published nothing for a while although a slot is
 * free and no batch waits to be taken: a consumer reading the ring waits on the producer, and the
 * producer does not move. The report gives the slots' counts, what the producer says of itself (the
 * GPU stage's figures), and every thread's state, lock and stack, so that a hang seen in a user's run,
 * or on a lent GPU machine where nobody can attach a debugger, comes with what finds its cause. It
 * stops nothing: a slow source (a remote store's first reads) may still go on, and the next batch
 * arms the report again.
 *
 * <p>One thread, the server's loop, calls {@link #check}; every line goes through its {@code say}.
 */
final class StallReport {
    /** What begins each of the report's lines (after the server's own prefix): the Python producer prints these. */
    static final String LINE = "stall: ";

    /** A thread's frames shown at most: where it waits, and enough of who called it. */
    private static final int FRAMES = 24;

    private final long limitNanos;
    private long published = -1;
    private long since;
    private boolean said;

    /** @param limitMillis how long without a batch before the report, 0 for never */
    StallReport(long limitMillis) {
        this.limitNanos = limitMillis * 1_000_000L;
    }

    /**
     * The producer waits on its consumer at {@code now} (an order feed's next epoch, which the
     * consumer gives when it starts reading it): no stall, and the limit counts again from here.
     */
    void consumerOwes(long now) {
        since = now;
        said = false;
    }

    /**
     * One look, at {@code now} (System.nanoTime): says the report where nothing was published for the
     * limit while a slot is free and nothing is ready. Returns whether it said it now.
     *
     * @param publishedNow batches published so far
     * @param counts the slots' states now
     * @param slotCount the ring's slots
     * @param producer what the producer says of itself, asked only when the report is said
     */
    boolean check(
            long now,
            long publishedNow,
            SlotCounts counts,
            int slotCount,
            Supplier<String> producer,
            Consumer<String> say) {
        boolean waiting = counts.ready() == 0 && counts.held() < slotCount;
        if (limitNanos <= 0 || publishedNow != published || !waiting) {
            published = publishedNow;
            since = now;
            said = false;
            return false;
        }
        if (said || now - since < limitNanos) {
            return false;
        }
        said = true;
        say.accept(LINE
                + String.format(
                        Locale.ROOT,
                        "no batch published for %d s while the consumer waits (%d published; slots: %d held, %d"
                                + " filling, %d free of %d): the producer's threads follow, for a bug report;"
                                + " it goes on waiting",
                        (now - since) / 1_000_000_000L,
                        publishedNow,
                        counts.held(),
                        counts.filling(),
                        counts.free(),
                        slotCount));
        String self = producer.get();
        if (self != null) {
            say.accept(LINE + "producer: " + self);
        }
        ThreadInfo[] threads = ManagementFactory.getThreadMXBean().dumpAllThreads(true, true, FRAMES);
        Arrays.sort(threads, Comparator.comparing(ThreadInfo::getThreadName));
        for (ThreadInfo t : threads) {
            say.accept(LINE + describe(t));
            for (StackTraceElement frame : t.getStackTrace()) {
                say.accept(LINE + "    at " + frame);
            }
        }
        return true;
    }

    /** A thread's first line: its name, state, and the lock it waits for and that lock's owner. */
    static String describe(ThreadInfo t) {
        StringBuilder b = new StringBuilder()
                .append('"')
                .append(t.getThreadName())
                .append("\" ")
                .append(t.getThreadState());
        if (t.getLockName() != null) {
            b.append(" on ").append(t.getLockName());
        }
        if (t.getLockOwnerName() != null) {
            b.append(" held by \"").append(t.getLockOwnerName()).append('"');
        }
        if (t.isInNative()) {
            b.append(" (in native code)");
        }
        return b.toString();
    }
}
