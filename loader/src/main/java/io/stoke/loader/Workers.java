package io.stoke.loader;

import java.io.Serializable;

/**
 * How many decoding threads a {@link Loader} runs: a fixed number, or {@link #auto()}: as many as
 * the consumer needs, chosen while it runs from measured rates (see {@link io.stoke.loader.autoworkers.AutoWorkersRule}).
 *
 * <p>Workers take one sample at a time from one counter, so the number of active workers can change
 * between two samples with no restart and no change to any batch's content: auto changes how fast
 * batches come, never what is in them.
 *
 * @param count the fixed number of workers, or, for auto, the most it may run
 * @param tuned whether the count is chosen live
 */
public record Workers(int count, boolean tuned) implements Serializable {
    public Workers {
        if (count < 1) {
            throw new IllegalArgumentException("workers must be positive, not " + count);
        }
    }

    /** Exactly {@code count} workers, all the time. */
    public static Workers fixed(int count) {
        return new Workers(count, false);
    }

    /** Workers chosen live, at most the cores this process may use. */
    public static Workers auto() {
        return new Workers(availableCores(), true);
    }

    /** Workers chosen live, at most {@code max} (and never more than the cores this process may use). */
    public static Workers auto(int max) {
        return new Workers(Math.min(max, availableCores()), true);
    }

    /**
     * Parses {@code "auto"} or a positive count, as the command line and the Python package give it.
     *
     * @param max the most an auto loader may run (0: the cores this process may use)
     */
    public static Workers parse(String value, int max) {
        if ("auto".equals(value)) {
            return max > 0 ? auto(max) : auto();
        }
        int n;
        try {
            n = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("workers must be a positive number or auto, not '" + value + "'");
        }
        return fixed(n);
    }

    /**
     * The cores this process may use: the JDK counts the CPU affinity mask and a cgroup's CPU quota
     * (a container limited to 2 CPUs on a 64-core host gets 2).
     */
    public static int availableCores() {
        return Runtime.getRuntime().availableProcessors();
    }

    @Override
    public String toString() {
        return tuned ? "auto (at most " + count + ")" : Integer.toString(count);
    }
}
