package io.stoke.loader.autoworkers;

import java.util.ArrayList;
import java.util.List;

/**
 * What an auto loader's auto-workers did: every change with its reason, and the windows it watched. Written
 * by the auto-workers thread, read by anyone (status lines, {@code bench}, the Python package).
 */
public final class AutoWorkersLog {
    /** Windows kept for {@link #windows()}: the recent past, enough to plot a run's last minutes. */
    public static final int KEPT_WINDOWS = 4096;

    private final List<WorkerChange> decisions = new ArrayList<>();
    private final List<MeasuredWindow> windows = new ArrayList<>();
    private final int maxWorkers;
    private volatile int activeWorkers;
    private volatile boolean yielding;
    private long windowCount;

    public AutoWorkersLog(int maxWorkers, int activeWorkers) {
        this.maxWorkers = maxWorkers;
        this.activeWorkers = activeWorkers;
    }

    public synchronized void window(MeasuredWindow w) {
        windowCount++;
        if (windows.size() == KEPT_WINDOWS) {
            windows.remove(0);
        }
        windows.add(w);
    }

    public synchronized void decision(WorkerChange d) {
        decisions.add(d);
        activeWorkers = d.toWorkers();
        yielding = d.toYielding();
    }

    /** Whether the workers yield to the consumer now (run at {@link AutoWorkersRule#YIELD_NICE}). */
    public boolean yielding() {
        return yielding;
    }

    /** Every change so far, oldest first. */
    public synchronized List<WorkerChange> decisions() {
        return List.copyOf(decisions);
    }

    /** The most recent windows (up to {@link #KEPT_WINDOWS}), oldest first. */
    public synchronized List<MeasuredWindow> windows() {
        return List.copyOf(windows);
    }

    /** Windows observed so far. */
    public synchronized long windowCount() {
        return windowCount;
    }

    /** Workers taking samples now. */
    public int activeWorkers() {
        return activeWorkers;
    }

    /** The most auto-workers may run. */
    public int maxWorkers() {
        return maxWorkers;
    }

    /** The consumer's waiting fraction over the recent windows (time-weighted), or 0 with none. */
    public synchronized double recentStallFraction(int lastWindows) {
        long wait = 0;
        long elapsed = 0;
        for (int i = Math.max(0, windows.size() - lastWindows); i < windows.size(); i++) {
            wait += windows.get(i).consumerWaitNanos();
            elapsed += windows.get(i).elapsedNanos();
        }
        return elapsed == 0 ? 0 : (double) wait / elapsed;
    }
}
