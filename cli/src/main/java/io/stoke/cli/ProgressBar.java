package io.stoke.cli;

import java.io.Console;
import java.io.PrintStream;
import java.util.Locale;

/**
 * A progress line on standard error: redrawn in place on a terminal, a line every 5 s otherwise
 * (or, for {@link #terminalOnly}, nothing until {@link #finish()}).
 */
final class ProgressBar {
    private final PrintStream err;
    private final long total;
    private final boolean terminal;
    private final long interval;
    private final long start = System.nanoTime();
    private long done;
    private long lastDraw;

    ProgressBar(PrintStream err, long total) {
        this(err, total, 100_000_000L, 5_000_000_000L);
    }

    private ProgressBar(PrintStream err, long total, long terminalInterval, long pipeInterval) {
        this.err = err;
        this.total = total; // 0: no end (--epochs 0)
        Console console = System.console();
        this.terminal = console != null && console.isTerminal();
        this.interval = terminal ? terminalInterval : pipeInterval;
    }

    /** Redrawn at most four times a second on a terminal; elsewhere only {@link #finish()} prints its line. */
    static ProgressBar terminalOnly(PrintStream err, long total) {
        return new ProgressBar(err, total, 250_000_000L, Long.MAX_VALUE);
    }

    void advance(long n) {
        done += n;
        long now = System.nanoTime();
        if (now - lastDraw > interval) {
            lastDraw = now;
            draw(now);
        }
    }

    private void draw(long now) {
        int width = 30;
        double rate = done * 1e9 / Math.max(1, now - start);
        String line;
        if (total > 0) {
            int filled = (int) Math.min(width, width * done / total);
            line = String.format(
                    Locale.ROOT,
                    "[%s%s] %d/%d images  %.0f images/s",
                    "#".repeat(filled),
                    ".".repeat(width - filled),
                    Math.min(done, total),
                    total,
                    rate);
        } else {
            line = String.format(Locale.ROOT, "%d images  %.0f images/s (no end: --epochs 0)", done, rate);
        }
        if (terminal) {
            err.print("\r" + line);
        } else {
            err.println(line);
        }
        err.flush();
    }

    void finish() {
        draw(System.nanoTime());
        if (terminal) {
            err.println();
        }
    }
}
