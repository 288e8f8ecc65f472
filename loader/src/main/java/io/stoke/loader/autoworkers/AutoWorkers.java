package io.stoke.loader.autoworkers;

import io.stoke.ffm.LibC;
import io.stoke.loader.internal.Joins;
import io.stoke.ring.RingState;
import io.stoke.ring.SlotCounts;
import java.util.concurrent.locks.LockSupport;

/**
 * The thread that measures an auto pipeline and applies {@link AutoWorkersRule}'s changes. Every
 * {@link #SAMPLE_NANOS} it looks at the ring (batches ready for the consumer); when a window is
 * complete it sums the workers' counters, their CPU and run-queue time, and the consumer's wait,
 * and asks the rule. The consumer's wait is exact: the in-process consumer's measured in
 * the pipeline's {@code nextSlot}, or what a consumer in another process adds to the ring's header.
 * Windows start once the consumer has taken its first batch (its wait for that one is the
 * pipeline's start, not a demand it cannot meet), and a window in which no batch was taken
 * says nothing about demand (no consumer) and is skipped.
 */
public final class AutoWorkers implements AutoCloseable {
    static final long SAMPLE_NANOS = 1_000_000L;

    private final WorkerPool pipeline;
    private final AutoWorkersRule rule;
    private final AutoWorkersLog log;
    private final Thread thread;
    private final int workers; // threads: the workers, and the yielding set when there is one
    private final long[] clock = new long[2];
    private ThreadClock threadClock; // the auto-workers thread's own, open while it runs
    private final long[] cpuMark;
    private final long[] runQueueMark;
    private final long[] samplesMark;
    private final long[] slotWaitMark;
    private volatile boolean stop;
    private boolean warnedNoWaits;
    // The window being measured: the auto-workers thread's own.
    private long windowStart;
    private long last;
    private long takenMark;
    private long lastTaken;
    private long waitMark;
    private long readyEmptyNanos;
    private int readyLow = Integer.MAX_VALUE;
    private int readyHigh;

    /**
     * Auto-workers for {@code pipeline}, whose {@code maxWorkers} all run at the start; with
     * {@code mayYield}, the pipeline has a second, yielding set of as many threads.
     */
    public AutoWorkers(WorkerPool pipeline, int maxWorkers, boolean mayYield) {
        this.pipeline = pipeline;
        int workers = mayYield ? 2 * maxWorkers : maxWorkers;
        this.workers = workers;
        this.rule = new AutoWorkersRule(maxWorkers, maxWorkers, mayYield);
        this.log = new AutoWorkersLog(maxWorkers, maxWorkers);
        this.cpuMark = new long[workers];
        this.runQueueMark = new long[workers];
        this.samplesMark = new long[workers];
        this.slotWaitMark = new long[workers];
        this.thread =
                Thread.ofPlatform().name("stoke-auto-workers").daemon(true).unstarted(this::run);
    }

    /** The calling thread's Linux id, or 0 where it cannot be had (auto-workers then use the JVM's CPU time). */
    public static long threadId() {
        try {
            return LibC.gettid();
        } catch (RuntimeException | LinkageError e) {
            return 0;
        }
    }

    /** Starts measuring, on a thread of its own. */
    public void start() {
        thread.start();
    }

    /** Every change and the windows measured. */
    public AutoWorkersLog log() {
        return log;
    }

    private void run() {
        try (ThreadClock opened = new ThreadClock(workers)) {
            threadClock = opened;
            measure();
        }
    }

    private void measure() {
        long start = System.nanoTime();
        RingState state = pipeline.ring().ringState();
        boolean started = false;
        while (!stop && pipeline.isRunningOrPublishing()) {
            LockSupport.parkNanos(SAMPLE_NANOS);
            long now = System.nanoTime();
            SlotCounts counts = pipeline.ring().counts();
            readyLow = Math.min(readyLow, counts.ready());
            readyHigh = Math.max(readyHigh, counts.ready());
            if (counts.ready() == 0) {
                readyEmptyNanos += now - last;
            }
            last = now;
            long taken = pipeline.consumerTaken();
            if (!started) {
                if (taken > 0) {
                    // The first window begins with the consumer's first batch in hand.
                    started = true;
                    beginWindow(now, taken);
                }
                continue;
            }
            // Windows end just after the consumer took a batch, so that a window's rate counts whole
            // batches between two takes, not a batch more or less by where its edge fell.
            boolean tookOne = taken != lastTaken;
            lastTaken = taken;
            long elapsed = now - windowStart;
            if (!(tookOne && AutoWorkersRule.windowComplete(elapsed, taken - takenMark))
                    && elapsed < AutoWorkersRule.MAX_WINDOW_NANOS) {
                continue;
            }
            long waited = pipeline.consumerWaitNanos() - waitMark;
            if (!pipeline.consumerInProcess() && state.consumerWaitNanos() == 0 && readyEmptyNanos > elapsed / 2) {
                // A consumer that does not add its waits to the ring (one of its own making, or an
                // older client) looks like one that never waits: use the time no batch was ready.
                if (!warnedNoWaits) {
                    warnedNoWaits = true;
                    System.err.println("stoke: WARNING: the ring's consumer does not report how long it waits"
                            + " for batches; auto workers use the time no batch was ready instead, which"
                            + " overstates the wait.");
                }
                waited = readyEmptyNanos;
            }
            MeasuredWindow w = endWindow(elapsed, taken - takenMark, waited);
            beginWindow(now, taken);
            if (w.batches() == 0) {
                continue;
            }
            log.window(w);
            WorkerChange d = rule.observe(w, now - start);
            if (d != null) {
                pipeline.activate(d.toWorkers(), d.toYielding());
                log.decision(d);
            }
        }
    }

    /** Starts a window at {@code now}: every mark taken again, the workers' counters included. */
    private void beginWindow(long now, long taken) {
        windowStart = now;
        takenMark = taken;
        lastTaken = taken;
        waitMark = pipeline.consumerWaitNanos();
        readyEmptyNanos = 0;
        readyLow = Integer.MAX_VALUE;
        readyHigh = 0;
        endWindow(0, 0, 0); // moves the workers' marks to now; the window it returns is nobody's
    }

    /** The window since the marks: the workers' counters summed from their marks, which move to now. */
    private MeasuredWindow endWindow(long elapsed, long batches, long waited) {
        long samples = 0;
        long cpu = 0;
        long runQueue = 0;
        long slotWait = 0;
        boolean runQueueKnown = true;
        for (int w = 0; w < workers; w++) {
            threadClock.read(w, (int) pipeline.threadId(w), pipeline.thread(w), clock);
            cpu += clock[0] - cpuMark[w];
            cpuMark[w] = clock[0];
            if (clock[1] < 0) {
                runQueueKnown = false;
            } else {
                runQueue += clock[1] - runQueueMark[w];
                runQueueMark[w] = clock[1];
            }
            long s = pipeline.samples(w);
            samples += s - samplesMark[w];
            samplesMark[w] = s;
            long sw = pipeline.slotWaitNanos(w);
            slotWait += sw - slotWaitMark[w];
            slotWaitMark[w] = sw;
        }
        return new MeasuredWindow(
                elapsed,
                batches,
                samples,
                rule.activeWorkers(),
                waited,
                cpu,
                runQueueKnown ? runQueue : -1,
                slotWait,
                readyLow == Integer.MAX_VALUE ? 0 : readyLow,
                readyHigh);
    }

    @Override
    public void close() {
        stop = true;
        LockSupport.unpark(thread);
        Joins.uninterruptibly(thread);
    }
}
