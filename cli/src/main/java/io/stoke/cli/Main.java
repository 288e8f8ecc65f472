package io.stoke.cli;

import io.stoke.loader.AllocatorThresholds;
import io.stoke.loader.internal.Urls;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code stoke}: the command-line tool. Each sub-command is a class of its own. Picocli builds a
 * command's model by reflection, which a fresh JVM runs interpreted (picocli's old class files are
 * outside the AOT cache): so a run builds only the sub-command it runs, and {@code --help} and
 * {@code help} build them all.
 */
@Command(
        name = "stoke",
        mixinStandardHelpOptions = true,
        version = "stoke 0.1.0",
        description =
                "Decodes image datasets (JPEG, PNG, WebP) into batches for accelerators, faster than PyTorch's DataLoader.")
public final class Main implements Runnable {
    /** Exit code when the run itself failed (bad input under --on-error fail, a worker died). */
    public static final int EXIT_FAILED = 1;
    /** Exit code for wrong usage. */
    public static final int EXIT_USAGE = 2;
    // Exit code 3 is the launcher's (./stoke): the build or a prerequisite failed. The CLI never
    // returns it, so a caller can tell "Stoke could not start" from what a command said.
    /** Exit code when a CUDA command finds no CUDA driver or no device. */
    public static final int EXIT_NO_DEVICE = 4;

    /** Every sub-command, in the order --help lists them. */
    private static final List<Class<?>> COMMANDS = List.of(
            DemoCommand.class,
            BenchCommand.class,
            ServeCommand.class,
            EmbedCommand.class,
            TuneCommand.class,
            SparkEmbedCommand.class,
            PackCommand.class,
            CatalogCommand.class,
            IndexCommand.class,
            CacheCommand.class,
            GpuCheckCommand.class,
            MakeDatasetCommand.class,
            AotTrainingCommand.class);

    @Override
    public void run() {
        commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        AllocatorThresholds.set(System.err); // this process is Stoke's: its allocator keeps libjpeg's scratch
        System.exit(Prestart.asked(args) ? Prestart.run(args) : execute(args));
    }

    /** The whole command line, every sub-command built. */
    public static CommandLine commandLine() {
        return commandLine(null);
    }

    /** The command line with only sub-command {@code only} when it names one, else all of them. */
    static CommandLine commandLine(String only) {
        CommandLine cl = new CommandLine(new Main());
        cl.setCaseInsensitiveEnumValuesAllowed(true); // --output FLOAT32 reads as float32
        List<Class<?>> chosen =
                COMMANDS.stream().filter(c -> name(c).equals(only)).toList();
        if (chosen.isEmpty()) {
            cl.addSubcommand("help", new CommandLine.HelpCommand());
            chosen = COMMANDS;
        }
        List<String> absent = new ArrayList<>();
        for (Class<?> c : chosen) {
            Object command;
            try {
                command = c.getDeclaredConstructor().newInstance();
            } catch (NoClassDefFoundError e) {
                // A jar built without a command's library (the Python wheel leaves ONNX Runtime
                // out) has every other command; this one is named, never silently gone.
                if (only != null && chosen.size() == 1) {
                    throw new AbsentCommandException(name(c), e.getMessage());
                }
                absent.add(name(c));
                continue;
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot create " + c, e);
            }
            cl.addSubcommand(name(c), command);
            LoaderOptions.install(cl.getSubcommands().get(name(c)).getCommandSpec()); // the options table's
        }
        if (!absent.isEmpty()) {
            cl.getCommandSpec()
                    .usageMessage()
                    .footer("%nNot in this build (their libraries were left out, as the Python wheel leaves them): "
                            + String.join(", ", absent) + ". Run them from a Stoke checkout's ./stoke.");
        }
        return cl;
    }

    /** The command asked for is not in this build: a class it needs is missing from the jar. */
    static final class AbsentCommandException extends RuntimeException {
        AbsentCommandException(String command, String missingClass) {
            super("the " + command + " command is not in this build: the class " + missingClass
                    + " it needs is missing (the Python wheel leaves ONNX Runtime Parquet out); run it from a"
                    + " Stoke checkout's ./stoke");
        }
    }

    private static String name(Class<?> command) {
        return command.getAnnotation(Command.class).name();
    }

    /** Runs the CLI and returns its exit code (tests call this). */
    public static int execute(String... args) {
        CommandLine cl;
        try {
            cl = commandLine(args.length > 0 ? args[0] : null);
        } catch (AbsentCommandException e) {
            System.err.println("stoke: " + e.getMessage());
            return EXIT_FAILED;
        }
        return execute(cl, args);
    }

    /**
     * Runs {@code cl} on {@code args}: a command's exception becomes one line on stderr (its
     * message, or its class where it has none) and {@link #EXIT_FAILED}. The harness's own command
     * line runs through here too. A URL in the message is {@link Urls#redact redacted}: Stoke's own
     * messages redact theirs, and this catches one that a library quotes (a presigned URL's query).
     */
    public static int execute(CommandLine cl, String... args) {
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr()
                    .println("stoke: "
                            + (e.getMessage() != null
                                    ? Urls.redactAll(e.getMessage())
                                    : e.getClass().getName()));
            return EXIT_FAILED;
        });
        try {
            return cl.execute(args);
        } finally {
            // A command's loaders are closed by then; what their options opened once per process
            // (the restart cache's filler) ends with the command, not with the JVM.
            CommandLine.ParseResult parsed = cl.getParseResult();
            while (parsed != null) {
                LoaderOptions.closeSetups(parsed.commandSpec());
                parsed = parsed.subcommand();
            }
        }
    }
}
