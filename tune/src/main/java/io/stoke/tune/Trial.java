package io.stoke.tune;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;

/**
 * One measured point: the loader at (batch size, workers) feeding the real consumer, run past a
 * warm-up and then timed for a while. The window starts when the consumer asks for its first timed
 * batch and ends when it has finished its last one, so it holds whole steps and whole waits: what
 * a training loop sees.
 */
public final class Trial {
    /** Batches the warm-up takes at least: the first fills the ring, the second runs at its pace. */
    static final int WARMUP_BATCHES = 2;
    /** Batches timed at least, however long they take: a rate from fewer is mostly one batch's luck. */
    static final int MIN_BATCHES = 3;

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private Trial() {}

    /**
     * What one point measured.
     *
     * @param batchSize          images per batch
     * @param workers            decoding threads
     * @param batches            batches timed
     * @param images             images in them
     * @param seconds            the timed window
     * @param imagesPerSecond    images over the window
     * @param stallFraction      the share of the window the consumer spent waiting for batches
     * @param waitMsPerBatch     the consumer's mean wait for a batch
     * @param stepMsPerBatch     the consumer's mean step
     * @param producerCpuSeconds CPU time of the decoding threads in the window (-1: not measurable here)
     * @param processCpuSeconds  CPU time of the whole process in the window (the model's threads too;
     *     -1: not measurable here)
     * @param otherCores         the cores other processes kept busy in the window, on average (-1:
     *     not measurable here): above a fraction of a core the point is disturbed
     */
    public record Measurement(
            int batchSize,
            int workers,
            long batches,
            long images,
            double seconds,
            double imagesPerSecond,
            double stallFraction,
            double waitMsPerBatch,
            double stepMsPerBatch,
            double producerCpuSeconds,
            double processCpuSeconds,
            double otherCores) {
        /** The decoding threads' CPU per image, in seconds (-1 when not measured). */
        public double producerCpuSecondsPerImage() {
            return producerCpuSeconds < 0 || images == 0 ? -1 : producerCpuSeconds / images;
        }
    }

    /**
     * Runs {@code step} on the loader's batches: warm-up ({@value #WARMUP_BATCHES} batches and at
     * least {@code warmupSeconds}), then a window of at least {@code seconds} and
     * {@value #MIN_BATCHES} batches.
     */
    public static Measurement run(
            LoaderFactory factory, int batchSize, int workers, Step step, double warmupSeconds, double seconds)
            throws Exception {
        try (Loader loader = factory.builder(batchSize, workers).build()) {
            long start = System.nanoTime();
            int warm = 0;
            while (warm < WARMUP_BATCHES || System.nanoTime() - start < warmupSeconds * 1e9) {
                try (Batch b = next(loader)) {
                    step.run(b);
                }
                warm++;
            }
            WorkerCpu producers = new WorkerCpu();
            long cpu0 = MachineLoad.processCpuNanos();
            double busy0 = MachineLoad.busySeconds();
            long t0 = System.nanoTime();
            long batches = 0;
            long images = 0;
            long wait = 0;
            long stepNanos = 0;
            long now = t0;
            while (batches < MIN_BATCHES || now - t0 < seconds * 1e9) {
                long asked = System.nanoTime();
                Batch b = next(loader);
                long got = System.nanoTime();
                try (b) {
                    step.run(b);
                    images += b.size();
                }
                // The step's time includes handing the slot back: the consumer's whole turn.
                now = System.nanoTime();
                wait += got - asked;
                stepNanos += now - got;
                batches++;
            }
            double window = (now - t0) / 1e9;
            double producerCpu = producers.secondsSinceStart();
            long cpu1 = MachineLoad.processCpuNanos();
            double busy1 = MachineLoad.busySeconds();
            double processCpu = cpu0 < 0 || cpu1 < 0 ? -1 : (cpu1 - cpu0) / 1e9;
            // /proc/stat counts in ticks of 10 ms: a window of a few seconds is good to a few percent.
            double others =
                    busy0 < 0 || busy1 < 0 || processCpu < 0 ? -1 : Math.max(0, (busy1 - busy0 - processCpu) / window);
            return new Measurement(
                    batchSize,
                    workers,
                    batches,
                    images,
                    window,
                    images / window,
                    wait / 1e9 / window,
                    wait / 1e6 / batches,
                    stepNanos / 1e6 / batches,
                    producerCpu,
                    processCpu,
                    others);
        }
    }

    private static Batch next(Loader loader) {
        Batch b = loader.next();
        if (b == null) {
            throw new IllegalStateException("the loader ended, though tune runs it with --epochs 0 (until stopped)");
        }
        return b;
    }

    /** CPU time of the loader's decoding threads (named {@code stoke-worker-N}) from now on. */
    static final class WorkerCpu {
        private final List<Long> ids = new ArrayList<>();
        private final List<Long> start = new ArrayList<>();
        private final boolean supported;

        WorkerCpu() {
            supported = THREADS.isThreadCpuTimeSupported() && THREADS.isThreadCpuTimeEnabled();
            if (!supported) {
                return;
            }
            for (ThreadInfo t : THREADS.getThreadInfo(THREADS.getAllThreadIds())) {
                if (t != null && t.getThreadName().startsWith("stoke-worker-")) {
                    long cpu = THREADS.getThreadCpuTime(t.getThreadId());
                    if (cpu >= 0) {
                        ids.add(t.getThreadId());
                        start.add(cpu);
                    }
                }
            }
        }

        /** Seconds of CPU since this was made, -1 where the JVM cannot measure a thread's CPU time. */
        double secondsSinceStart() {
            if (!supported || ids.isEmpty()) {
                return -1;
            }
            long total = 0;
            for (int i = 0; i < ids.size(); i++) {
                long cpu = THREADS.getThreadCpuTime(ids.get(i));
                if (cpu < 0) {
                    return -1; // a worker ended inside the window: its share is lost, so say unknown
                }
                total += cpu - start.get(i);
            }
            return total / 1e9;
        }
    }
}
