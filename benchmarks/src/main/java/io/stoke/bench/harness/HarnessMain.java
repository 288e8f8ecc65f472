package io.stoke.bench.harness;

import io.stoke.cli.Main;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code java -jar benchmarks.jar}: the benchmark harness that compares Stoke with PyTorch's
 * DataLoader ({@code ./stoke harness}), and the one timed Stoke run it starts in a process of its
 * own ({@code harness-run}). It lives beside the benchmarks, out of the CLI a user installs.
 */
@Command(
        name = "stoke-harness",
        mixinStandardHelpOptions = true,
        subcommands = {
            HarnessCommand.class,
            StokeRunCommand.class,
            HarnessAotTraining.class,
            AutotuneCommand.class,
            AutotuneRunCommand.class
        },
        description = "Stoke against PyTorch's DataLoader, measured side by side.")
public final class HarnessMain implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    public static int execute(String... args) {
        return Main.execute(new CommandLine(new HarnessMain()), args);
    }
}
