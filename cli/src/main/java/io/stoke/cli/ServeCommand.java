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
            "Decode DATA into a shared-memory ring for a consumer in another process. DATA is an ImageFolder",
            "tree (DATA/<class>/<image>.jpg) or a list file with one '<path> <label>' per line. Takes the same",
            "loader options as 'stoke bench'."
        })
public final class ServeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(
            index = "0",
            paramLabel = "DATA",
            description = {
                "The dataset: an ImageFolder directory, a list file, a WebDataset .tar shard, a brace pattern",
                "of shards (train-{000000..000127}.tar), or a folder of .tar shards."
            })
    String data;

    @Option(
            names = "--ring",
            required = true,
            paramLabel = "PATH",
            description = {
                "The ring file, e.g. /dev/shm/train: its pages are reserved when it is created, and a ring",
                "that does not fit fails at once saying how many bytes it needs and how many are free. Or",
                "/dev/fd/N: an empty file this process inherited as descriptor N (an anonymous memfd, which no",
                "/dev/shm size limits), laid out in place and left to its owner (how stoke.DataLoader runs)."
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
            names = "--parent-pid",
            paramLabel = "PID",
            description = {
                "Stop, and remove the ring file, within 100 ms of process PID exiting, however it ends",
                "(kill -9 included), from the start on (while a remote dataset opens too): how",
                "stoke.DataLoader ties its producer to the Python process."
            })
    Long parentPid;

    @Option(
            names = "--sample-list-out",
            paramLabel = "FILE",
            description = {
                "Before the ring is ready, write the sample list to FILE: a header line, then one JSON array",
                "[path, label] per sample, in dataset order (a batch's indices are line numbers from 0), written",
                "atomically and removed with the ring; /dev/fd/N is written in place and kept (docs/shared-memory.md)."
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
            description = "With --restart-cache-dir, append what the restart cache did in each epoch to FILE as the"
                    + " epoch's last batch is published, one JSON object per line, which the Python package reads"
                    + " (docs/shared-memory.md); the same counts are one line on standard error either way.")
    Path restartCacheLog;

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
                .parentPid(parentPid)
                .sampleList(sampleList)
                .autoWorkersLog(autoWorkersLog)
                .restartCacheLog(restartCacheLog)
                .run();
    }
}
