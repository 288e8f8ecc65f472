package io.stoke.gpu;

import io.stoke.loader.decode.SampleTransform;
import io.stoke.loader.internal.Joins;
import io.stoke.loader.source.SampleReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.BlockingDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The CPU threads of a {@link GpuDecodeStage}: thread {@code r} makes, uses and closes its own
 * {@link SampleReader} and {@link SampleTransform} (their native buffers belong to the thread that
 * made them), and runs the tasks given to it: the urgent ones first ({@link #submitFirst}), each lane
 * in the order given. A thread with no task queued runs one step of the {@link Background} work at a
 * time, so that a task given to it waits for one image at most.
 */
final class ReaderThreads implements AutoCloseable {
    /** What a task runs with: its thread's own reader and CPU transform. */
    interface Task {
        void run(SampleReader reader, SampleTransform transform);
    }

    /**
     * Work the threads take one step at a time whenever they have no task: the CPU's whole batches,
     * which the reads and decodes the device waits for go ahead of.
     */
    interface Background {
        /** Runs one step (one image) with the calling thread's reader and transform; false when there is none. */
        boolean step(SampleReader reader, SampleTransform transform);
    }

    private static final Runnable STOP = () -> {};
    private static final Runnable WAKE = () -> {};

    private final Thread[] threads;
    private final List<BlockingDeque<Runnable>> queues;
    /** Per thread, the urgent lane: taken before its queue; a WAKE in the queue rouses a waiting thread. */
    private final List<Queue<Runnable>> urgent;

    private final ThreadLocal<SampleReader> reader = new ThreadLocal<>();
    private final ThreadLocal<SampleTransform> transform = new ThreadLocal<>();
    private volatile Background background;
    private final Doorbell done;
    /** Threads waiting for a task with no background work: counted only where they would block anyway. */
    private final AtomicInteger waiting = new AtomicInteger();

    private volatile boolean stopped;

    /**
     * Starts {@code n} threads, each making its reader and transform; {@code done} rings after each
     * task's future has completed (the background work rings its own ends: a whole batch's, not each
     * step's, which would wake a waiting decode thread once an image).
     */
    ReaderThreads(int n, Supplier<SampleReader> readers, Supplier<SampleTransform> transforms, Doorbell done) {
        this(n, readers, transforms, done, idle -> {});
    }

    /**
     * As above, first giving {@code idleTo} {@link #idle}, before any thread makes its reader: a
     * restart cache's reader starts the cache's fillers, which are to be paced from their start.
     */
    ReaderThreads(
            int n,
            Supplier<SampleReader> readers,
            Supplier<SampleTransform> transforms,
            Doorbell done,
            Consumer<BooleanSupplier> idleTo) {
        this.done = done;
        idleTo.accept(this::idle);
        threads = new Thread[n];
        queues = new ArrayList<>(n);
        urgent = new ArrayList<>(n);
        try {
            for (int r = 0; r < n; r++) {
                BlockingDeque<Runnable> queue = new LinkedBlockingDeque<>();
                Queue<Runnable> first = new ConcurrentLinkedQueue<>();
                queues.add(queue);
                urgent.add(first);
                threads[r] = Thread.ofPlatform()
                        .name("stoke-gpu-reader-" + r)
                        .daemon()
                        .start(() -> loop(queue, first, readers, transforms));
            }
        } catch (RuntimeException | Error e) {
            close(); // the threads started so far stop, and close what they made
            throw e;
        }
    }

    int size() {
        return threads.length;
    }

    private void loop(
            BlockingDeque<Runnable> queue,
            Queue<Runnable> first,
            Supplier<SampleReader> readers,
            Supplier<SampleTransform> transforms) {
        SampleReader ownReader = null;
        SampleTransform ownTransform = null;
        Throwable broken = null;
        try {
            ownReader = readers.get();
            ownTransform = transforms.get();
        } catch (RuntimeException | Error e) {
            broken = e; // every task given to this thread fails with it
        }
        reader.set(ownReader);
        transform.set(ownTransform);
        try {
            for (; ; ) {
                Runnable task = first.poll();
                if (task == null) {
                    task = queue.poll();
                }
                if (task == null) {
                    Background b = background;
                    if (b != null && broken == null && b.step(ownReader, ownTransform)) {
                        continue; // then the queue again: a task waits for one image at most
                    }
                    waiting.incrementAndGet(); // an idle core: the restart cache's fillers may take it
                    try {
                        task = queue.take();
                    } finally {
                        waiting.decrementAndGet();
                    }
                }
                if (task == STOP) {
                    for (Runnable late; (late = first.poll()) != null; ) {
                        run(late, broken); // given before close: its future completes
                    }
                    break;
                }
                if (task == WAKE) {
                    continue;
                }
                run(task, broken);
            }
        } catch (InterruptedException e) {
            // closing
        } finally {
            if (ownTransform != null) {
                ownTransform.close();
            }
            if (ownReader != null) {
                ownReader.close();
            }
        }
    }

    private void run(Runnable task, Throwable broken) {
        if (broken != null) {
            ((Failing) task).fail(broken);
        } else {
            task.run();
        }
        done.ring(); // after the future completed: a waiter that wakes finds it done
    }

    /** Runs {@code task} on thread {@code r} with its reader and transform, after those queued; the future completes after. */
    Future<?> submit(int r, Task task) {
        Failing f = new Failing(task);
        queues.get(r).addLast(f);
        return f.done;
    }

    /**
     * As {@link #submit}, in the urgent lane: after the urgent tasks given before, ahead of the rest.
     * The CPU's decodes of a batch the device waits for go before the next batch's reads, and an
     * older batch's before a newer one's (batches are handed out in order).
     */
    Future<?> submitFirst(int r, Task task) {
        Failing f = new Failing(task);
        urgent.get(r).add(f);
        queues.get(r).offerFirst(WAKE); // a thread waiting for its queue looks at the lane again
        return f.done;
    }

    /** Sets the work the threads run when they have no task; set once, before {@link #wake}. */
    void background(Background work) {
        this.background = work;
    }

    /** Tells threads waiting for a task that the background has work again. */
    void wake() {
        for (BlockingDeque<Runnable> q : queues) {
            if (q.isEmpty()) {
                q.offerLast(WAKE);
            }
        }
    }

    private final class Failing implements Runnable {
        final Task task;
        final CompletableFuture<Void> done = new CompletableFuture<>();

        Failing(Task task) {
            this.task = task;
        }

        @Override
        public void run() {
            try {
                task.run(reader.get(), transform.get());
                done.complete(null);
            } catch (RuntimeException | Error e) {
                done.completeExceptionally(e);
            }
        }

        void fail(Throwable e) {
            done.completeExceptionally(e);
        }
    }

    /**
     * Whether the threads leave CPU to spare, for a restart cache's fillers ({@link
     * io.stoke.loader.cache.RestartCache#pace}): at least one thread waits
     * for a task, with no background work to take (the device, or the consumer behind it, sets the
     * pace); or the threads have stopped. While it is false every thread reads or decodes, and a
     * filler would take its core.
     */
    boolean idle() {
        return waiting.get() > 0 || stopped;
    }

    /** Lets each thread finish its queued tasks, then stops it; its reader and transform close there. */
    @Override
    public void close() {
        stopped = true;
        for (BlockingDeque<Runnable> q : queues) {
            q.addLast(STOP);
        }
        for (Thread t : threads) {
            if (t != null) {
                Joins.uninterruptibly(t);
            }
        }
    }
}
