package io.stoke.serve;

import java.io.PrintWriter;

/**
 * {@code --parent-pid}: ends this process within {@link #POLL_MILLIS} ms of the parent's exit,
 * however it ends ({@code kill -9} included), from the command's first instruction on. A daemon
 * thread watches, so that what the main thread is doing does not matter: opening a remote dataset
 * (an {@code index.json}, or every shard's headers) can take minutes against a slow store, and an
 * orphan must not fetch a single shard more.
 *
 * <p>On the parent's exit it says so once and exits, which runs the shutdown hooks (the serve
 * loop's stops the workers and removes a named ring and index); a hook that does not end within
 * {@link #EXIT_GRACE_MILLIS} ms (a worker blocked in a stalled read) is not waited for: the process
 * halts. {@code stoke.DataLoader} also has the kernel kill its producer with it
 * ({@code PR_SET_PDEATHSIG}, set before the JVM runs), which covers the JVM's own start and a JVM
 * that cannot run this thread (stopped, starved); this watch covers every other parent, which only
 * names its pid (a script, the soak).
 */
final class ParentWatch implements AutoCloseable {
    /** How often the parent is looked at. */
    static final long POLL_MILLIS = 100;
    /** How long the shutdown hooks may take once the parent is gone. */
    static final long EXIT_GRACE_MILLIS = 1_000;

    private final Thread thread;

    private ParentWatch(Thread thread) {
        this.thread = thread;
    }

    /**
     * Starts watching process {@code pid}.
     *
     * @param command the command's name, for messages ({@code stoke serve})
     * @return the watch, to close when the command ends; null, having said so on {@code err}, when
     *     the parent is not running
     */
    static ParentWatch start(long pid, String command, PrintWriter err) {
        // ProcessHandle remembers the process's start time, so a pid reused by another process
        // after the parent's exit is not taken for the parent.
        ProcessHandle parent = ProcessHandle.of(pid).orElse(null);
        if (parent == null || !parent.isAlive()) {
            err.println(command + ": the parent process " + pid + " is not running");
            err.flush();
            return null;
        }
        Thread thread = new Thread(() -> watch(parent, command, err), "stoke-parent-watch");
        thread.setDaemon(true);
        thread.start();
        return new ParentWatch(thread);
    }

    private static void watch(ProcessHandle parent, String command, PrintWriter err) {
        try {
            while (parent.isAlive()) {
                Thread.sleep(POLL_MILLIS);
            }
        } catch (InterruptedException e) {
            return; // the command ended first (close)
        }
        err.println(command + ": the parent process " + parent.pid() + " is gone; stopping");
        err.flush();
        Thread halt = new Thread(
                () -> {
                    try {
                        Thread.sleep(EXIT_GRACE_MILLIS);
                    } catch (InterruptedException e) {
                        // halt now
                    }
                    Runtime.getRuntime().halt(RingServer.EXIT_FAILED);
                },
                "stoke-parent-gone-halt");
        halt.setDaemon(true);
        halt.start();
        System.exit(RingServer.EXIT_FAILED);
    }

    /** Stops watching: the command has ended (a test or {@code aot-training} runs it in a JVM that goes on). */
    @Override
    public void close() {
        thread.interrupt();
    }
}
