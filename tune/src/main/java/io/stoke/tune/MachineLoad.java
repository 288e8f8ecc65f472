package io.stoke.tune;

import com.sun.management.OperatingSystemMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The CPU time every process on the machine used, from {@code /proc/stat}, and this process's own:
 * what other processes took from the cores while a point ran. A point measured while something
 * else ran is not this machine's answer, and tune says so.
 */
final class MachineLoad {
    /** Linux reports {@code /proc/stat} in clock ticks of 1/100 s (USER_HZ) on every architecture. */
    private static final double TICK_SECONDS = 0.01;

    private static final Path STAT = Path.of("/proc/stat");

    private MachineLoad() {}

    /**
     * This process's CPU time in nanoseconds. Here rather than in {@link ModelStep}, which names ONNX
     * Runtime's types: a build without it (the Python wheel) tunes a sleep step.
     */
    static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** Busy CPU seconds of the whole machine since boot, or -1 where {@code /proc/stat} cannot be read. */
    static double busySeconds() {
        try {
            for (String line : Files.readAllLines(STAT)) {
                if (line.startsWith("cpu ")) {
                    String[] f = line.trim().split("\\s+");
                    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
                    long busy = 0;
                    for (int i = 1; i <= 8 && i < f.length; i++) {
                        if (i != 4 && i != 5) {
                            busy += Long.parseLong(f[i]);
                        }
                    }
                    return busy * TICK_SECONDS;
                }
            }
        } catch (IOException | RuntimeException e) {
            // Not Linux: other processes' load is unknown, and the report says -1.
        }
        return -1;
    }
}
