package io.stoke.loader.autoworkers;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.ffm.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * The workers' CPU time and run-queue wait, read by the auto-workers thread (its only user): Linux's
 * {@code /proc/self/task/TID/schedstat} ("run ns, wait ns, timeslices"), whose wait is the time a
 * thread was runnable and no CPU was free. Each file is opened once and read again with
 * {@code pread} at offset 0 (the kernel regenerates it), into one buffer this clock's arena owns:
 * no allocation per read. Without it (no /proc, no tid), the JVM's thread CPU time, with the wait
 * unknown, said once. A worker that has ended (its file gone with it, at the end of a run) keeps its
 * last reading, since it runs no more: no warning, and no window's CPU time going back to 0.
 */
final class ThreadClock implements AutoCloseable {
    private static final int BUFFER = 128;

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment callState = LibC.allocateCallState(arena);
    private final MemorySegment buffer = arena.allocate(BUFFER);
    private final int[] fds;
    private final long[] lastRun; // each worker's last schedstat reading, -1 before one
    private final long[] lastWait;
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private boolean warned;

    ThreadClock(int threadCount) {
        fds = new int[threadCount];
        Arrays.fill(fds, -1);
        lastRun = new long[threadCount];
        lastWait = new long[threadCount];
        Arrays.fill(lastRun, -1);
    }

    /**
     * Reads worker {@code w}'s times into {@code out}: out[0] its CPU nanoseconds, out[1] its
     * run-queue wait, -1 when unknown.
     *
     * @param tid the thread's Linux id, or 0 when not known yet
     */
    void read(int w, int tid, Thread thread, long[] out) {
        if (tid > 0 && readSchedstat(w, tid, thread, out)) {
            lastRun[w] = out[0];
            lastWait[w] = out[1];
            return;
        }
        if (lastRun[w] >= 0 && !thread.isAlive()) {
            out[0] = lastRun[w];
            out[1] = lastWait[w];
            return;
        }
        long cpu = threads.isThreadCpuTimeSupported() ? threads.getThreadCpuTime(thread.threadId()) : -1;
        out[0] = Math.max(0, cpu);
        out[1] = -1;
    }

    private boolean readSchedstat(int w, int tid, Thread thread, long[] out) {
        if (fds[w] < 0) {
            MemorySegment path = arena.allocateFrom("/proc/self/task/" + tid + "/schedstat");
            fds[w] = LibC.open(callState, path, LibC.O_RDONLY | LibC.O_CLOEXEC);
            if (fds[w] < 0) {
                if (thread.isAlive()) { // an ended worker's file is gone with it: nothing is amiss
                    warn("cannot open /proc/self/task/" + tid + "/schedstat: " + LibC.strerror(LibC.errno(callState)));
                }
                return false;
            }
        }
        long n = LibC.pread(callState, fds[w], buffer, BUFFER, 0);
        int i = 0;
        long run = 0;
        long wait = 0;
        for (; i < n && buffer.get(JAVA_BYTE, i) != ' '; i++) {
            run = run * 10 + (buffer.get(JAVA_BYTE, i) - '0');
        }
        for (i++; i < n && buffer.get(JAVA_BYTE, i) != ' '; i++) {
            wait = wait * 10 + (buffer.get(JAVA_BYTE, i) - '0');
        }
        if (n <= 0 || i >= n) {
            if (thread.isAlive()) {
                warn("cannot read /proc/self/task/" + tid + "/schedstat");
            }
            return false;
        }
        out[0] = run;
        out[1] = wait;
        return true;
    }

    private void warn(String why) {
        if (!warned) {
            warned = true;
            System.err.println("stoke: WARNING: " + why + "; auto-workers use the JVM's thread CPU time and cannot see"
                    + " contention for the cores.");
        }
    }

    @Override
    public void close() {
        for (int fd : fds) {
            if (fd >= 0) {
                LibC.close(fd);
            }
        }
        arena.close();
    }
}
