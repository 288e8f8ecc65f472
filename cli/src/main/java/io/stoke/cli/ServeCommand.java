package io.stoke.cli;

import io.stoke.serve.RingServer;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code stoke serve DATA --ring /dev/shm/NAME}: the command line of {@link RingServer}, which
 * decodes a dataset into a shared-memory ring that a consumer in another process reads.
 */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = {
            "Decode DATA into a shared-memory ring for a consumer in another process. DATA is any dataset "
                    + "'stoke bench' reads (an ImageFolder, a list file, shards, Parquet); it takes the same loader options."
        })
public final class ServeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DATA", description = LoaderOptions.DATA)
    String data;

    @Option(
            names = "--ring",
            required = true,
            paramLabel = "PATH",
            description = {
                "The ring file, e.g. /dev/shm/train (a ring that does not fit fails at once, saying the bytes it needs "
                        + "and those free), or /dev/fd/N: an inherited empty file (a memfd), laid out in place (stoke.DataLoader's)."
            })
    Path ring;

    @Mixin
    LoaderOptions options;

    @Option(
            names = "--status-interval",
            defaultValue = "1000",
            paramLabel = "MS",
            description = "Milliseconds between status lines on stderr, 0 = none (default: ${DEFAULT-VALUE}).")
    long statusInterval;

    @Option(
            names = "--stall-report",
            defaultValue = "60",
            paramLabel = "SECONDS",
            description = {
                "After SECONDS with no batch published while the consumer waits, say once on stderr every thread's"
                        + " state and stack (lines 'stoke serve: stall: ...'), for a bug report; the run goes on."
                        + " 0 = never (default: ${DEFAULT-VALUE})."
            })
    long stallReport;

    @Option(
            names = "--parent-pid",
            paramLabel = "PID",
            description = {
                "Stop, and remove the ring file, within 100 ms of process PID exiting, however it ends (kill -9 "
                        + "included), from the start on: how stoke.DataLoader ties its producer to the Python process."
            })
    Long parentPid;

    @Option(
            names = "--sample-list-out",
            paramLabel = "FILE",
            description = {
                "Before the ring is ready, write the sample list to FILE: a header, then one JSON [path, label] per "
                        + "sample in dataset order, atomically, removed with the ring; /dev/fd/N in place (docs/shared-memory.md)."
            })
    Path sampleList;

    @Option(
            names = "--index-out",
            hidden = true,
            paramLabel = "FILE",
            description = "Deprecated: use --sample-list-out.")
    void indexOut(Path file) {
        LoaderOptions.deprecated("--index-out", "--sample-list-out");
        sampleList = file;
    }

    @Option(
            names = "--auto-workers-log",
            paramLabel = "FILE",
            description = "With --workers auto, append each change of the active workers to FILE as it is made, one"
                    + " JSON object per line, which the Python package reads (docs/shared-memory.md).")
    Path autoWorkersLog;

    @Option(
            names = "--restart-cache-log",
            paramLabel = "FILE",
            description = "With --restart-cache-dir, append what the restart cache did in each epoch to FILE, one JSON"
                    + " object per line (docs/shared-memory.md); stderr says the same counts in one line either way.")
    Path restartCacheLog;

    @Option(
            names = "--device-slots-out",
            paramLabel = "FILE",
            description =
                    "With --decode gpu|auto, keep each slot's pixels on the GPU, in an allocation a consumer on"
                            + " the same device opens by CUDA IPC, and describe them in FILE before the first batch, one JSON"
                            + " object (docs/shared-memory.md); where the CPU decodes, FILE says so and the pixels are in the ring.")
    Path deviceSlotsOut;

    @Option(
            names = "--tuning-out",
            hidden = true,
            paramLabel = "FILE",
            description = "Deprecated: use --auto-workers-log.")
    void tuningOut(Path file) {
        LoaderOptions.deprecated("--tuning-out", "--auto-workers-log");
        autoWorkersLog = file;
    }

    @Override
    public Integer call() throws Exception {
        return new RingServer(data, options.settings(), ring, spec.commandLine().getErr())
                .statusInterval(statusInterval)
                .stallReport(stallReport * 1000)
                .parentPid(parentPid)
                .sampleList(sampleList)
                .autoWorkersLog(autoWorkersLog)
                .restartCacheLog(restartCacheLog)
                .deviceSlotsOut(deviceSlotsOut)
                .run();
    }
}
