package io.stoke.loader.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;

/**
 * What opening a dataset does to many shards or files at once (scanning tar headers, asking sizes,
 * reading Parquet footers): {@code count} tasks on at most {@code threads} daemon threads of its
 * own, the results in task order, the first failure rethrown as it was.
 */
public final class InParallel {
    private InParallel() {}

    /**
     * {@code task.apply(i)} for i in {@code [0, count)}, in order.
     *
     * @param name the threads' name, and what an interruption is said to have stopped
     */
    public static <R> List<R> map(int count, int threads, String name, IntFunction<R> task) {
        List<R> out = new ArrayList<>(count);
        if (count <= 1 || threads <= 1) {
            for (int i = 0; i < count; i++) {
                out.add(task.apply(i));
            }
            return out;
        }
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(threads, count), r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<R>> futures = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                int at = i;
                futures.add(pool.submit(() -> task.apply(at)));
            }
            for (Future<R> f : futures) {
                out.add(f.get());
            }
            return out;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + name, e);
        } finally {
            pool.shutdownNow();
        }
    }
}
