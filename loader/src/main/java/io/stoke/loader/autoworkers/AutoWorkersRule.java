package io.stoke.loader.autoworkers;

import java.util.Locale;

/**
 * Chooses how many workers decode, from one {@link MeasuredWindow} at a time: the fewest with which
 * the consumer almost never waits, so that a model on the same cores keeps the rest.
 *
 * <p>The rule, per window (the first window after a change is skipped: it straddles the change):
 * <ul>
 *   <li>The consumer waited more than {@link #STALL_HIGH} of the window: add a worker, up to the most
 *       allowed.
 *   <li>It waited less than {@link #STALL_LOW}: the workers used {@link MeasuredWindow#decodeCores()}
 *       cores to keep up, so {@code ceil(cores * HEADROOM)} workers suffice; drop to that many if
 *       it is fewer than now. One window measures what the demand takes, so a long way down is one
 *       step, not one worker per window.
 *   <li>Between the two marks: hold (the hysteresis band).
 *   <li>The workers waited more than {@link #CONTENDED} of their runnable time for a CPU while the
 *       consumer did not wait: other threads want the cores (a model's). The workers then yield:
 *       they run at nice {@link #YIELD_NICE}, so the consumer's threads run first and the workers
 *       decode on what they leave (not in the first 8 windows). Undone if the rate then falls by 7%,
 *       and when the rate later moves by half (the consumer changed: the rule looks again).
 *   <li>A change that did not pay is undone: an added worker that neither cut the wait by a third
 *       nor raised the rate by 3% (the cores are busy elsewhere); a removal after which the
 *       consumer waits, or the rate falls by 7% (a consumer on the same cores that the remaining
 *       worker slows). The same change is then not tried for a back-off of 4 windows, doubling
 *       to 64 while it keeps failing, and lifted at once when the wait or the rate moves by half
 *       (the consumer's step changed).
 * </ul>
 * At most one change per window. Pure: no clock, no threads; the live pipeline and the tests'
 * simulation feed it the same windows. Not thread-safe: the auto-workers thread owns it.
 */
public final class AutoWorkersRule {
    /** The consumer's waiting fraction above which a worker is added. */
    public static final double STALL_HIGH = 0.02;
    /** The waiting fraction below which workers may be removed. */
    public static final double STALL_LOW = 0.005;
    /** Workers kept per core of decoding the demand takes. */
    public static final double HEADROOM = 1.15;
    /** A window ends after this many batches and {@link #MIN_WINDOW_NANOS}, or at {@link #MAX_WINDOW_NANOS}. */
    public static final int MIN_WINDOW_BATCHES = 8;
    /** The workers' run-queue fraction above which they yield to the consumer. */
    public static final double CONTENDED = 0.25;
    /** The nice value of yielding workers. */
    public static final int YIELD_NICE = 19;

    public static final long MIN_WINDOW_NANOS = 250_000_000L;
    public static final long MAX_WINDOW_NANOS = 2_000_000_000L;

    private static final int FIRST_BACKOFF = 4;
    private static final int MAX_BACKOFF = 64;
    private static final int MAX_YIELD_BACKOFF = 1024;
    private static final int FIRST_YIELD_WINDOW = 8;
    /**
     * A removal or a yield that keeps less than this of the rate before it is undone. Two windows'
     * rates of the same steady loop differ by a few percent (a sleep's overshoot, a collection):
     * a smaller margin undoes changes that cost nothing.
     */
    private static final double RATE_HELD = 0.93;

    private enum Change {
        NONE,
        ADD,
        REMOVE,
        YIELD
    }

    private final int maxWorkers;
    private final boolean mayYield;
    private int active;
    private boolean yielding;
    private boolean pendingFromYielding;
    // Yielding is tried once the count has had its first windows to settle: a trial that fails
    // costs two windows, which a short run should not pay for a gain it cannot keep long.
    private long yieldBlockedUntil = FIRST_YIELD_WINDOW;
    private int yieldBackoff = FIRST_BACKOFF;
    private MeasuredWindow yieldedAt;
    private long window;
    private boolean settling;
    private Change pending = Change.NONE;
    private int pendingFrom;
    private MeasuredWindow before;
    private long addBlockedUntil;
    private long removeBlockedUntil;
    private int addBackoff = FIRST_BACKOFF;
    private int removeBackoff = FIRST_BACKOFF;
    private MeasuredWindow blockedOn;
    private boolean awaitingBaseline;

    /**
     * @param maxWorkers the most workers it may run (the cores the process may use, or fewer)
     * @param initial    workers active at the start
     * @param mayYield   whether it may lower the workers' priority (they start at the process's)
     */
    public AutoWorkersRule(int maxWorkers, int initial, boolean mayYield) {
        if (maxWorkers < 1 || initial < 1 || initial > maxWorkers) {
            throw new IllegalArgumentException("workers " + initial + " of at most " + maxWorkers);
        }
        this.maxWorkers = maxWorkers;
        this.active = initial;
        this.mayYield = mayYield;
    }

    /** {@link #AutoWorkersRule(int, int, boolean)} that never changes the workers' priority. */
    public AutoWorkersRule(int maxWorkers, int initial) {
        this(maxWorkers, initial, false);
    }

    /** Whether a window of this length and this many batches is long enough to decide on. */
    public static boolean windowComplete(long elapsedNanos, long batches) {
        return (batches >= MIN_WINDOW_BATCHES && elapsedNanos >= MIN_WINDOW_NANOS) || elapsedNanos >= MAX_WINDOW_NANOS;
    }

    public int activeWorkers() {
        return active;
    }

    public int maxWorkers() {
        return maxWorkers;
    }

    /** Whether the workers run at {@link #YIELD_NICE} now. */
    public boolean yielding() {
        return yielding;
    }

    /**
     * Takes one window and returns the change it calls for, or null to hold.
     *
     * @param atNanos the window's end, for the decision's record
     */
    public WorkerChange observe(MeasuredWindow w, long atNanos) {
        window++;
        if (settling) {
            settling = false;
            return null;
        }
        double stall = w.stallFraction();
        if (pending != Change.NONE) {
            WorkerChange undo = evaluate(w, atNanos);
            if (undo != null) {
                return undo;
            }
        }
        liftBackoffIfChanged(w);
        if (yielding && yieldedAt != null) {
            double then = yieldedAt.rate();
            if (then > 0 && Math.abs(w.rate() - then) > 0.5 * then) {
                String why = String.format(
                        Locale.ROOT,
                        "the consumer changed (%.1f batches/s against %.1f when the workers began to yield)",
                        w.rate(),
                        then);
                yieldedAt = null;
                return change(w, atNanos, active, false, Change.NONE, why);
            }
        }
        if (stall > STALL_HIGH) {
            if (active < maxWorkers && window >= addBlockedUntil) {
                return change(
                        w,
                        atNanos,
                        active + 1,
                        yielding,
                        Change.ADD,
                        String.format(Locale.ROOT, "the consumer waited %.1f%% of the time", 100 * stall));
            }
            return null;
        }
        if (stall < STALL_LOW && active > 1 && window >= removeBlockedUntil) {
            double cores = w.decodeCores();
            int enough = Math.max(1, (int) Math.ceil(cores * HEADROOM));
            if (enough < active) {
                return change(
                        w,
                        atNanos,
                        enough,
                        yielding,
                        Change.REMOVE,
                        String.format(
                                Locale.ROOT,
                                "the consumer waited %.2f%% of the time and decoding took %.2f cores",
                                100 * stall,
                                cores));
            }
        }
        double runQueue = w.runQueueFraction();
        if (stall < STALL_LOW && mayYield && !yielding && runQueue > CONTENDED && window >= yieldBlockedUntil) {
            return change(
                    w,
                    atNanos,
                    active,
                    true,
                    Change.YIELD,
                    String.format(
                            Locale.ROOT,
                            "the workers waited %.0f%% of their runnable time for a CPU while the consumer waited"
                                    + " %.2f%%: they yield the cores to it",
                            100 * runQueue,
                            100 * stall));
        }
        return null;
    }

    /** Undoes the last change if it did not pay; null if it did. */
    private WorkerChange evaluate(MeasuredWindow w, long atNanos) {
        Change last = pending;
        pending = Change.NONE;
        double stall = w.stallFraction();
        if (last == Change.ADD) {
            boolean waitCut = stall < before.stallFraction() * (2.0 / 3) || stall <= STALL_HIGH;
            boolean faster = w.rate() > before.rate() * 1.03;
            if (waitCut || faster) {
                addBackoff = FIRST_BACKOFF;
                return null;
            }
            addBlockedUntil = window + 2 + addBackoff; // the settling window does not count
            awaitingBaseline = true;
            String why = String.format(
                    Locale.ROOT,
                    "worker %d did not pay (the consumer still waited %.1f%%, %.1f batches/s against %.1f%s);"
                            + " not tried again for %d windows",
                    active,
                    100 * stall,
                    w.rate(),
                    before.rate(),
                    w.runQueueFraction() > 0.1
                            ? String.format(
                                    Locale.ROOT,
                                    "; workers waited %.0f%% of their time for a CPU",
                                    100 * w.runQueueFraction())
                            : "",
                    addBackoff);
            addBackoff = Math.min(MAX_BACKOFF, addBackoff * 2);
            return change(w, atNanos, pendingFrom, pendingFromYielding, Change.NONE, why);
        }
        if (last == Change.YIELD) {
            // Yielding pays when the rate holds: the consumer's steps are faster, and it may wait
            // a little while the workers decode in what it leaves.
            if (w.rate() >= before.rate() * RATE_HELD) {
                yieldedAt = w;
                return null;
            }
            yieldBlockedUntil = window + 2 + yieldBackoff;
            awaitingBaseline = true;
            String why = String.format(
                    Locale.ROOT,
                    "yielding (the consumer waiting %.1f%% of the time) cut the rate to %.1f batches/s from"
                            + " %.1f; not tried again for %d windows",
                    100 * stall,
                    w.rate(),
                    before.rate(),
                    yieldBackoff);
            // Fourfold: while the consumer stays the same, yielding keeps costing the same.
            yieldBackoff = Math.min(MAX_YIELD_BACKOFF, yieldBackoff * 4);
            return change(w, atNanos, pendingFrom, false, Change.NONE, why);
        }
        // A removal can also cost the rate with the consumer never waiting: a consumer on the same
        // cores (a model on the CPU) whose steps the one remaining worker now slows all the time.
        boolean slower = w.rate() < before.rate() * RATE_HELD;
        if (stall > STALL_HIGH || slower) {
            removeBlockedUntil = window + 2 + removeBackoff;
            awaitingBaseline = true;
            String why = stall > STALL_HIGH
                    ? String.format(
                            Locale.ROOT,
                            "with %d workers the consumer waited %.1f%% of the time; not tried again for %d windows",
                            active,
                            100 * stall,
                            removeBackoff)
                    : String.format(
                            Locale.ROOT,
                            "with %d workers the rate fell to %.1f batches/s from %.1f; not tried again for %d windows",
                            active,
                            w.rate(),
                            before.rate(),
                            removeBackoff);
            removeBackoff = Math.min(MAX_BACKOFF, removeBackoff * 2);
            return change(w, atNanos, pendingFrom, pendingFromYielding, Change.NONE, why);
        }
        removeBackoff = FIRST_BACKOFF;
        return null;
    }

    /**
     * Lifts the back-off when the consumer changed: against the first window after the undo, the
     * rate moved by half, or the wait crossed the band between the marks.
     */
    private void liftBackoffIfChanged(MeasuredWindow w) {
        if (awaitingBaseline) {
            awaitingBaseline = false;
            blockedOn = w;
            return;
        }
        if (blockedOn == null) {
            return;
        }
        double stallThen = blockedOn.stallFraction();
        double stallNow = w.stallFraction();
        double rateThen = blockedOn.rate();
        boolean rateMoved = rateThen > 0 && Math.abs(w.rate() - rateThen) > 0.5 * rateThen;
        boolean crossed =
                (stallThen < STALL_LOW && stallNow > STALL_HIGH) || (stallThen > STALL_HIGH && stallNow < STALL_LOW);
        if (rateMoved || crossed) {
            addBlockedUntil = 0;
            removeBlockedUntil = 0;
            yieldBlockedUntil = FIRST_YIELD_WINDOW;
            addBackoff = FIRST_BACKOFF;
            removeBackoff = FIRST_BACKOFF;
            yieldBackoff = FIRST_BACKOFF;
            blockedOn = null;
        }
    }

    private WorkerChange change(
            MeasuredWindow w, long atNanos, int to, boolean toYielding, Change kind, String reason) {
        WorkerChange d = new WorkerChange(window, atNanos, active, to, yielding, toYielding, reason, w);
        pending = kind;
        pendingFrom = active;
        pendingFromYielding = yielding;
        before = w;
        active = to;
        yielding = toYielding;
        settling = true;
        return d;
    }
}
