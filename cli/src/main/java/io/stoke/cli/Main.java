package io.stoke.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code stoke}: the command-line tool. Each sub-command is a class of its own. */
@Command(name = "stoke", mixinStandardHelpOptions = true, version = "stoke 0.1.0",
        description = "Decodes JPEG datasets into batches for accelerators, faster than PyTorch's DataLoader.",
        subcommands = {
                CommandLine.HelpCommand.class,
                DemoCommand.class,
                BenchCommand.class,
                ServeCommand.class,
                EmbedCommand.class,
                GpuCheckCommand.class,
                MakeDatasetCommand.class,
                HarnessCommand.class,
                io.stoke.cli.harness.StokeRunCommand.class,
                AotTrainingCommand.class,
        })
public final class Main implements Runnable {
    /** Exit code when the run itself failed (bad input under --on-error fail, a worker died). */
    public static final int EXIT_FAILED = 1;
    /** Exit code for wrong usage. */
    public static final int EXIT_USAGE = 2;

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /** Runs the CLI and returns its exit code (tests call this). */
    public static int execute(String... args) {
        CommandLine cl = new CommandLine(new Main());
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println("stoke: " + e.getMessage());
            return EXIT_FAILED;
        });
        return cl.execute(args);
    }
}
