package io.stoke.loader.work;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A worker thread's CPU time and run-queue wait, read by the tuner from another thread: Linux's
 * {@code /proc/self/task/TID/schedstat} ("run ns, wait ns, timeslices"), whose wait is the time
 * the thread was runnable and no CPU was free. Without it (no /proc), the JVM's thread CPU time,
 * with the wait unknown, said once.
 */
final class ThreadClock {
    private static final AtomicBoolean WARNED = new AtomicBoolean();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private ThreadClock() {}

    /**
     * Reads {@code thread}'s times into {@code out}: out[0] its CPU nanoseconds, out[1] its run-queue
     * wait, -1 when unknown.
     *
     * @param tid the thread's Linux id, or 0 when not known yet
     */
    static void read(int tid, Thread thread, long[] out) {
        if (tid > 0) {
            try {
                String s = Files.readString(Path.of("/proc/self/task/" + tid + "/schedstat"));
                int a = s.indexOf(' ');
                int b = s.indexOf(' ', a + 1);
                out[0] = Long.parseLong(s, 0, a, 10);
                out[1] = Long.parseLong(s, a + 1, b, 10);
                return;
            } catch (IOException | RuntimeException e) {
                if (WARNED.compareAndSet(false, true)) {
                    System.err.println("stoke: WARNING: cannot read the workers' scheduler statistics (" + e
                            + "); the tuner uses the JVM's thread CPU time and cannot see contention for the cores.");
                }
            }
        }
        long cpu = THREADS.isThreadCpuTimeSupported() ? THREADS.getThreadCpuTime(thread.threadId()) : -1;
        out[0] = Math.max(0, cpu);
        out[1] = -1;
    }
}
