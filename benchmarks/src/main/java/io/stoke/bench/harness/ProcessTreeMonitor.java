package io.stoke.bench.harness;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Samples a process and all its descendants from {@code /proc} on a thread of its own: the peak of
 * the summed RSS and Pss, each process's VmHWM, and each process's CPU time, so that a loader made
 * of several processes (PyTorch's workers) is charged for all of them.
 *
 * <p>Linux only. A process that exits between two samples keeps the last CPU time and VmHWM seen;
 * the sampling interval bounds what can be missed.
 */
public final class ProcessTreeMonitor implements AutoCloseable {
    private static final long TICKS_PER_SECOND = clockTicks();

    private final long rootPid;
    private final long intervalMs;
    private final Thread thread;
    private final Map<Long, Long> cpuTicks = new HashMap<>();
    private final Map<Long, Long> hwmKb = new HashMap<>();
    private long peakRssKb;
    private long peakPssKb;
    private volatile boolean stop;

    /** Starts sampling {@code rootPid}'s tree every {@code intervalMs} milliseconds. */
    public ProcessTreeMonitor(long rootPid, long intervalMs) {
        this.rootPid = rootPid;
        this.intervalMs = intervalMs;
        sample();
        thread = Thread.ofPlatform().daemon().name("stoke-harness-monitor").start(this::loop);
    }

    private void loop() {
        while (!stop) {
            sample();
            try {
                Thread.sleep(intervalMs);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Takes one sample now; returns the tree's CPU time so far in seconds. */
    public synchronized double sample() {
        long rss = 0;
        long pss = 0;
        List<Long> pids;
        try (Stream<ProcessHandle> d =
                ProcessHandle.of(rootPid).map(ProcessHandle::descendants).orElse(Stream.empty())) {
            pids = Stream.concat(Stream.of(rootPid), d.map(ProcessHandle::pid)).toList();
        }
        for (long pid : pids) {
            Path proc = Path.of("/proc", Long.toString(pid));
            try {
                long[] status = status(Files.readAllLines(proc.resolve("status")));
                rss += status[0];
                hwmKb.merge(pid, status[1], Math::max);
                long ticks = cpuTicks(Files.readString(proc.resolve("stat")));
                cpuTicks.merge(pid, ticks, Math::max);
                pss += pss(proc);
            } catch (IOException | RuntimeException e) {
                // The process exited while being read: its last sample stands.
            }
        }
        peakRssKb = Math.max(peakRssKb, rss);
        peakPssKb = Math.max(peakPssKb, pss);
        return cpuSeconds();
    }

    private static long pss(Path proc) {
        try {
            for (String line : Files.readAllLines(proc.resolve("smaps_rollup"))) {
                if (line.startsWith("Pss:")) {
                    return kb(line);
                }
            }
        } catch (IOException e) {
            // No smaps_rollup (old kernel, or the process is gone): Pss unknown for it.
        }
        return 0;
    }

    /** {VmRSS, VmHWM} in kB from the lines of {@code /proc/PID/status}. */
    public static long[] status(List<String> lines) {
        long rss = 0;
        long hwm = 0;
        for (String line : lines) {
            if (line.startsWith("VmRSS:")) {
                rss = kb(line);
            } else if (line.startsWith("VmHWM:")) {
                hwm = kb(line);
            }
        }
        return new long[] {rss, hwm};
    }

    private static long kb(String line) {
        String[] parts = line.trim().split("\\s+");
        return Long.parseLong(parts[1]);
    }

    /** utime + stime in clock ticks from {@code /proc/PID/stat} (fields 14 and 15; the name may hold spaces). */
    public static long cpuTicks(String stat) {
        String rest = stat.substring(stat.lastIndexOf(')') + 2);
        String[] f = rest.trim().split("\\s+");
        // rest starts at field 3 (state): utime is field 14, stime field 15.
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** CPU time of every process seen so far, in seconds. */
    public synchronized double cpuSeconds() {
        long sum = 0;
        for (long t : cpuTicks.values()) {
            sum += t;
        }
        return (double) sum / TICKS_PER_SECOND;
    }

    public synchronized long peakRssBytes() {
        return peakRssKb * 1024;
    }

    public synchronized long peakPssBytes() {
        return peakPssKb * 1024;
    }

    /** The sum of each process's own peak RSS: an upper bound on the tree's peak. */
    public synchronized long sumHwmBytes() {
        long sum = 0;
        for (long v : hwmKb.values()) {
            sum += v;
        }
        return sum * 1024;
    }

    /** CPU time (user + system) of this process's waited-for children so far, in seconds. */
    public static double childrenCpuSeconds() {
        try {
            String stat = Files.readString(Path.of("/proc/self/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
            return (Long.parseLong(f[13]) + Long.parseLong(f[14])) / (double) TICKS_PER_SECOND;
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    private static long clockTicks() {
        try {
            Process p = new ProcessBuilder("getconf", "CLK_TCK")
                    .redirectErrorStream(true)
                    .start();
            String s = new String(p.getInputStream().readAllBytes()).trim();
            p.waitFor();
            return Long.parseLong(s);
        } catch (Exception e) {
            return 100; // Linux's USER_HZ on every mainstream architecture.
        }
    }

    @Override
    public void close() {
        stop = true;
        thread.interrupt();
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
