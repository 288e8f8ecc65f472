package io.stoke.gpu;

import java.util.ArrayList;
import java.util.List;

/**
 * What a stage holds natively (its context, streams, events, device buffers, arenas ...), in the
 * order it made them, closed newest first. Owned by the stage; not thread-safe.
 */
final class StageResources {
    private final List<AutoCloseable> held = new ArrayList<>();

    /** Holds {@code resource} until {@link #closeAll}; returns it. */
    <T extends AutoCloseable> T keep(T resource) {
        held.add(resource);
        return resource;
    }

    /**
     * Closes every resource, newest first, each even when one before failed; returns {@code first}
     * or else the first failure, the rest suppressed into it, or null.
     */
    RuntimeException closeAll(RuntimeException first) {
        for (int i = held.size() - 1; i >= 0; i--) {
            try {
                held.get(i).close();
            } catch (Exception e) {
                if (first == null) {
                    first = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        held.clear();
        return first;
    }
}
