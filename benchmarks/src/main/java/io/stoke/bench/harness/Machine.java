package io.stoke.bench.harness;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/** A line describing the machine, for the summary: cores, CPU model, memory, OS, JDK. */
public final class Machine {
    private Machine() {}

    public static String describe() {
        String cpu = "unknown CPU";
        String mem = "unknown memory";
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    cpu = line.substring(line.indexOf(':') + 1).trim();
                    break;
                }
            }
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemTotal:")) {
                    long kb = Long.parseLong(line.replaceAll("[^0-9]", ""));
                    mem = String.format(Locale.ROOT, "%.1f GiB RAM", kb / 1024.0 / 1024.0);
                    break;
                }
            }
        } catch (IOException | RuntimeException e) {
            // Not Linux, or /proc unreadable: say unknown rather than guess.
        }
        return String.format(
                Locale.ROOT,
                "%d cores available to the JVM, %s, %s; %s %s; Java %s",
                Runtime.getRuntime().availableProcessors(),
                cpu,
                mem,
                System.getProperty("os.name"),
                System.getProperty("os.version"),
                System.getProperty("java.version"));
    }
}
