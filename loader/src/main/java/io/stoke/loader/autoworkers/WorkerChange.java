package io.stoke.loader.autoworkers;

import java.util.Locale;

/**
 * One change auto-workers made, and why, with the window that led to it.
 *
 * @param window       the window's number (from 1), counted by auto-workers
 * @param atNanos      when, from the loader's start (wall clock, or virtual time in a simulation)
 * @param fromWorkers  active workers before
 * @param toWorkers    active workers after
 * @param fromYielding whether the workers ran at {@link AutoWorkersRule#YIELD_NICE} before
 * @param toYielding   and after
 * @param reason       the reason in words, with the figures it was made from
 * @param observed     the window it was decided on
 */
public record WorkerChange(
        long window,
        long atNanos,
        int fromWorkers,
        int toWorkers,
        boolean fromYielding,
        boolean toYielding,
        String reason,
        MeasuredWindow observed) {
    @Override
    public String toString() {
        String what = fromWorkers != toWorkers
                ? "workers " + fromWorkers + " -> " + toWorkers
                : "workers " + toWorkers
                        + (toYielding
                                ? " yield (nice " + AutoWorkersRule.YIELD_NICE + ")"
                                : " back to the process's priority");
        return String.format(Locale.ROOT, "%.1f s: %s: %s", atNanos / 1e9, what, reason);
    }
}
