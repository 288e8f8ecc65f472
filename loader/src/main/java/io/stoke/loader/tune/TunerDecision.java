package io.stoke.loader.tune;

/**
 * One change the tuner made, and why, with the window that led to it.
 *
 * @param window      the window's number (from 1), counted by the tuner
 * @param atNanos     when, from the loader's start (wall clock, or virtual time in a simulation)
 * @param fromWorkers active workers before
 * @param toWorkers   active workers after
 * @param reason      the reason in words, with the figures it was made from
 * @param observed    the window it was decided on
 */
public record TunerDecision(
        long window, long atNanos, int fromWorkers, int toWorkers, String reason, TunerWindow observed) {
    @Override
    public String toString() {
        return String.format(
                java.util.Locale.ROOT, "%.1f s: workers %d -> %d: %s", atNanos / 1e9, fromWorkers, toWorkers, reason);
    }
}
