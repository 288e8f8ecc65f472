package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.sample.EpochCut;
import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.sample.Sampler.PartitionTail;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.RandomErasing;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.serve.LoaderOption;
import io.stoke.serve.LoaderSetup;
import io.stoke.serve.OptionTable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/** Every command that drives a loader takes the same loader options, with the same defaults and help. */
class LoaderOptionsTest {
    private static final List<String> DRIVERS = List.of("demo", "bench", "serve", "embed", "tune");

    /** The option set {@code LoaderOptions} makes from the table, as picocli reads it. */
    private static Map<String, String> declared() {
        CommandSpec spec = CommandSpec.create();
        new LoaderOptions().addTo(spec);
        return describe(spec.options());
    }

    /** {@code args} parsed into a fresh {@code LoaderOptions}, as a command's mixin would be. */
    static LoaderOptions parse(String... args) {
        LoaderOptions options = new LoaderOptions();
        CommandSpec spec = CommandSpec.create();
        options.addTo(spec);
        new CommandLine(spec).parseArgs(args);
        return options;
    }

    private static Map<String, String> describe(List<OptionSpec> options) {
        Map<String, String> m = new TreeMap<>();
        for (OptionSpec o : options) {
            m.put(
                    o.longestName(),
                    String.join(" ", o.description()) + " | default " + o.defaultValue() + " | initial "
                            + Arrays.deepToString(new Object[] {o.initialValue()}) + " | " + o.paramLabel());
        }
        return m;
    }

    @Test
    void demoBenchAndServeHaveEveryLoaderOptionWithTheSameDefaultAndHelp() {
        Map<String, String> expected = declared();
        assertTrue(
                expected.keySet()
                        .containsAll(List.of(
                                "--workers",
                                "--max-workers",
                                "--batch-size",
                                "--slots",
                                "--epochs",
                                "--start-epoch",
                                "--shuffle",
                                "--seed",
                                "--drop-last",
                                "--rank",
                                "--world-size",
                                "--partition-tail",
                                "--shard-tail",
                                "--resize",
                                "--crop",
                                "--output",
                                "--dct-scaling",
                                "--max-pixels",
                                "--on-error",
                                "--transform",
                                "--scale",
                                "--ratio",
                                "--flip")),
                expected.keySet().toString());
        CommandLine cli = Main.commandLine();
        for (String name : DRIVERS) {
            CommandLine sub = cli.getSubcommands().get(name);
            Map<String, String> got = describe(sub.getCommandSpec().options().stream()
                    .filter(o -> expected.containsKey(o.longestName()))
                    .toList());
            assertEquals(expected, got, name);
        }
    }

    /** What a user compares: the lines of {@code --help}. Each loader option reads the same in bench and serve. */
    @Test
    void benchAndServeHelpListTheSameLoaderOptions() {
        String[] bench = BenchCommandTest.run("bench", "--help");
        String[] serve = BenchCommandTest.run("serve", "--help");
        assertEquals("0", bench[0]);
        assertEquals("0", serve[0]);
        for (String option : visible()) {
            String b = optionHelp(bench[1], option);
            assertFalse(b.isEmpty(), option + " missing from bench --help:\n" + bench[1]);
            assertEquals(b, optionHelp(serve[1], option), option);
        }
    }

    /** The table's flags, deprecated spellings left out (they are hidden from help). */
    private static List<String> visible() {
        return OptionTable.shipped().options().stream().map(LoaderOption::cli).toList();
    }

    /**
     * The help of one option: its own line and the continuation lines under it, spaces removed
     * (picocli aligns and wraps the description column to each command's longest option, even inside "[n,3,C,C]").
     */
    private static String optionHelp(String usage, String option) {
        StringBuilder sb = new StringBuilder();
        boolean in = false;
        for (String line : usage.lines().toList()) {
            String t = line.strip();
            // An option's own line starts in picocli's option columns; a wrapped description line
            // that happens to begin with "--" is indented to the description column.
            boolean starts = t.startsWith("-") && line.indexOf('-') <= 6;
            if (starts) {
                in = t.startsWith(option + "=")
                        || t.startsWith(option + " ")
                        || t.equals(option)
                        || t.startsWith("--[no-]" + option.substring(2) + " ");
            }
            if (in) {
                sb.append(t).append(' ');
            }
        }
        return sb.toString().replaceAll("\\s+", "");
    }

    @Test
    void shardTailPadsByDefaultAndDropsWhenAsked(@TempDir Path tmp) {
        Path root = TestImages.imageFolder(tmp.resolve("seven"), 7, 2, 3);
        try (Dataset dataset = LoaderSetup.openFailing(root)) {
            LoaderOptions pad = parse("--rank", "1", "--world-size", "2");
            Sampler s = pad.builder(dataset).sampler();
            assertEquals(PartitionTail.PAD, s.partitionTail());
            assertEquals(4, s.samplesPerEpoch());
            assertEquals(3, s.unpaddedSamples());
            LoaderOptions drop = parse("--rank", "1", "--world-size", "2", "--shard-tail", "drop");
            s = drop.builder(dataset).sampler();
            assertEquals(PartitionTail.DROP, s.partitionTail());
            assertEquals(3, s.samplesPerEpoch());
        }
        String[] r = BenchCommandTest.run("bench", root.toString(), "--shard-tail", "sideways");
        assertEquals("2", r[0]);
        assertTrue(r[2].contains("--shard-tail") && r[2].contains("pad, drop"), r[2]);
    }

    /**
     * {@code --start-state} resumes the states in a file on this run's world; {@code --start-cuts}
     * is its low-level form; the refusals are one sentence each.
     */
    @Test
    void startStateResumesSavedStatesOnThisWorldAndStartCutsIsItsLowLevelForm(@TempDir Path tmp) throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("forty"), 40, 2, 3);
        List<LoaderState> four = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            four.add(LoaderState.of(new Sampler(40, 3, true, 7, false, r, 4), r, 4, 1, r == 2 ? 1 : 2));
        }
        Path states = Files.writeString(
                tmp.resolve("states.json"),
                "[" + String.join(",", four.stream().map(LoaderState::toJson).toList()) + "]");
        try (Dataset dataset = LoaderSetup.openFailing(root)) {
            List<String> rankOneOfTwo =
                    List.of("--shuffle", "--seed", "7", "--batch-size", "5", "--rank", "1", "--world-size", "2");
            LoaderOptions resumed = options(rankOneOfTwo, "--start-state", states.toString());
            Sampler s = resumed.builder(dataset).sampler();
            List<EpochCut> cuts = List.of(new EpochCut(4, new int[] {6, 6, 3, 6}));
            assertEquals(1, s.resumedEpoch());
            assertEquals(cuts, s.cuts());
            assertEquals(19, s.epochLength(1), "40 less the 21 taken");
            assertEquals(10, s.samplesPerEpoch(1));
            LoaderOptions low = options(
                    rankOneOfTwo,
                    "--start-epoch",
                    "1",
                    "--start-cuts",
                    "[{\"world_size\": 4, \"taken\": [6, 6, 3, 6]}]");
            assertArrayEquals(s.order(1), low.builder(dataset).sampler().order(1));
            LoaderOptions otherSeed = parse("--shuffle", "--seed", "8", "--start-state", states.toString());
            String seed = assertThrows(
                            IllegalArgumentException.class,
                            () -> otherSeed.builder(dataset).sampler())
                    .getMessage();
            assertTrue(seed.contains("seed=7, this loader has 8"), seed);
        }
        String[] r = BenchCommandTest.run(
                "bench",
                root.toString(),
                "--start-state",
                tmp.resolve("none.json").toString());
        assertEquals("1", r[0], r[1] + r[2]);
        assertTrue(r[2].contains("--start-state") && r[2].contains("cannot read it"), r[2]);
    }

    private static LoaderOptions options(List<String> common, String... more) {
        List<String> args = new ArrayList<>(common);
        args.addAll(List.of(more));
        return parse(args.toArray(String[]::new));
    }

    @Test
    void meanAndStdNormaliseTheFloatOutputWithImageNetsByDefault() {
        TransformSpec spec = parse().transform();
        assertArrayEquals(TransformSpec.IMAGENET_MEAN, spec.mean());
        assertArrayEquals(TransformSpec.IMAGENET_STD, spec.std());
        spec = parse("--output", "float32", "--mean", "0.5,0.25,0", "--std", "1,0.5,2")
                .transform();
        assertArrayEquals(new float[] {0.5f, 0.25f, 0f}, spec.mean());
        assertArrayEquals(new float[] {1f, 0.5f, 2f}, spec.std());
        CommandLine.ParameterException p =
                assertThrows(CommandLine.ParameterException.class, () -> parse("--mean", "0.5,0.5"));
        assertTrue(p.getMessage().contains("--mean takes 3 numbers separated by commas"), p.getMessage());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> parse("--std", "1,0,1").transform());
        assertTrue(e.getMessage().contains("--std must be three positive"), e.getMessage());
    }

    @Test
    void interpolationReachesTheSpecOfBothTransforms() {
        assertEquals(TransformSpec.Interpolation.BILINEAR, parse().transform().interpolation());
        assertEquals(
                TransformSpec.Interpolation.BICUBIC,
                parse("--interpolation", "bicubic").transform().interpolation());
        TransformSpec train =
                parse("--transform", "train", "--interpolation", "NEAREST").transform();
        assertTrue(train.isTrain());
        assertEquals(TransformSpec.Interpolation.NEAREST, train.interpolation());
        CommandLine.ParameterException p =
                assertThrows(CommandLine.ParameterException.class, () -> parse("--interpolation", "lanczos"));
        assertTrue(p.getMessage().contains("--interpolation"), p.getMessage());
    }

    @Test
    void eraseReachesTheSpecOnFloatOutputOnly() {
        assertNull(parse("--output", "float32").transform().erasing());
        assertEquals(
                new RandomErasing(0.25, 0.02, 0.33, 0.3, 3.3, null),
                parse("--output", "float32", "--erase", "0.25", "--erase-value", "random")
                        .transform()
                        .erasing());
        assertEquals(
                new RandomErasing(1, 0.1, 0.2, 0.5, 2, new float[] {1, -2, 0.5f}),
                parse(
                                "--output",
                                "float32",
                                "--erase",
                                "1",
                                "--erase-scale",
                                "0.1,0.2",
                                "--erase-ratio",
                                "0.5,2",
                                "--erase-value",
                                "1,-2,0.5")
                        .transform()
                        .erasing());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> parse("--erase", "0.5").transform());
        assertTrue(e.getMessage().contains("float32"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> parse("--output", "float32", "--erase", "0.5", "--erase-value", "grey")
                        .transform());
        assertTrue(e.getMessage().contains("--erase-value"), e.getMessage());
        // On the uint8 image (RandomErasing after PILToTensor): either output.
        for (String output : new String[] {"uint8", "float32"}) {
            assertEquals(
                    new RandomErasing(0.5, 0.02, 0.33, 0.3, 3.3, new float[] {124, 116, 104}, true),
                    parse("--output", output, "--erase", "0.5", "--erase-value", "uint8:124,116,104")
                            .transform()
                            .erasing());
        }
        e = assertThrows(
                IllegalArgumentException.class,
                () -> parse("--erase", "0.5", "--erase-value", "uint8:random").transform());
        assertTrue(e.getMessage().contains("on a uint8 image is refused"), e.getMessage());
    }

    /** Every command that drives a loader has every option of the table, and its deprecated spelling. */
    @Test
    void everyDriverHasEveryOptionTheTableHolds() {
        CommandLine cli = Main.commandLine();
        List<String> missing = new ArrayList<>();
        for (String name : List.of("demo", "bench", "serve", "embed", "tune", "spark-embed")) {
            CommandSpec spec = cli.getSubcommands().get(name).getCommandSpec();
            for (LoaderOption o : OptionTable.shipped().options()) {
                for (String flag : o.flags()) {
                    if (spec.findOption(flag) == null) {
                        missing.add(name + " " + flag);
                    }
                }
            }
        }
        assertEquals(List.of(), missing);
    }

    /**
     * An option added to the table reaches the command line with nothing else written: the flag is
     * in the command's model and its help, a value parses into the settings by the entry's type and
     * checks, and the entry's deprecated spelling works too, saying once that it is deprecated.
     */
    @Test
    void aMadeUpOptionInTheTableIsAnOptionOfTheCommandLine() {
        OptionTable table = OptionTable.shipped()
                .with(new LoaderOption(
                        "made_up_depth",
                        io.stoke.serve.OptionType.INT,
                        1.0,
                        9.0,
                        null,
                        null,
                        "2",
                        null,
                        "--made-up-depth",
                        "D",
                        "made_up_depth",
                        null,
                        new LoaderOption.Deprecated("--made-up-old", "made_up_old"),
                        "How deep the made-up option goes, 1-9 (default: ${DEFAULT-VALUE})."));
        ServeCommand serve = new ServeCommand();
        serve.options = new LoaderOptions(table);
        CommandLine cl = new CommandLine(serve);
        assertTrue(LoaderOptions.install(cl.getCommandSpec()));
        assertTrue(cl.getCommandSpec().findOption("--made-up-depth") != null);
        String usage = cl.getUsageMessage();
        assertTrue(usage.contains("--made-up-depth=D"), usage);
        assertTrue(usage.contains("How deep the made-up option goes, 1-9 (default: 2)."), usage);
        assertFalse(usage.contains("--made-up-old"), "a deprecated spelling is hidden from help");
        assertEquals(2, serve.options.settings().integer("made_up_depth"));
        cl.parseArgs("DATA", "--ring", "/dev/shm/x", "--made-up-depth", "7");
        assertEquals(7, serve.options.settings().integer("made_up_depth"));
        CommandLine.ParameterException e = assertThrows(
                CommandLine.ParameterException.class,
                () -> cl.parseArgs("DATA", "--ring", "/dev/shm/x", "--made-up-depth", "10"));
        assertTrue(
                e.getMessage().contains("--made-up-depth takes a whole number from 1 to 9, not '10'"), e.getMessage());
        String[] said = io.stoke.loader.testing.CapturedRun.of(() -> {
            cl.parseArgs("DATA", "--ring", "/dev/shm/x", "--made-up-old", "5");
            cl.parseArgs("DATA", "--ring", "/dev/shm/x", "--made-up-old", "6");
            return serve.options.settings().integer("made_up_depth");
        });
        assertEquals("6", said[0]);
        assertEquals("stoke: --made-up-old is deprecated and goes in the next release: use --made-up-depth\n", said[2]);
    }

    /** The old spellings users and the Python package pass still work, each saying once that it is deprecated. */
    @Test
    void theDeprecatedSpellingsStillWork() {
        LoaderOptions old = parse("--shard-tail", "drop", "--cache-size", "1G", "--shard-cache", "512M");
        assertEquals("drop", old.settings().text("partition_tail"));
        assertEquals(1L << 30, old.settings().bytes("restart_cache_size"));
        assertEquals(512L << 20, old.settings().bytes("shard_cache_size"));
        LoaderOptions now = parse("--partition-tail", "drop", "--restart-cache-size", "1G");
        assertEquals("drop", now.settings().text("partition_tail"));
    }

    /** serve's side files under their new names, and the old ones, which still work and say so once. */
    @Test
    void serveTakesTheSideFilesUnderTheirNewAndOldNames() {
        ServeCommand now = new ServeCommand();
        new CommandLine(now)
                .parseArgs("D", "--ring", "/dev/shm/r", "--sample-list-out", "/tmp/s", "--auto-workers-log", "/tmp/a");
        assertEquals(Path.of("/tmp/s"), now.sampleList);
        assertEquals(Path.of("/tmp/a"), now.autoWorkersLog);
        ServeCommand old = new ServeCommand();
        String[] said = io.stoke.loader.testing.CapturedRun.of(() -> {
            new CommandLine(old)
                    .parseArgs("D", "--ring", "/dev/shm/r", "--index-out", "/tmp/s", "--tuning-out", "/tmp/a");
            new CommandLine(old).parseArgs("D", "--ring", "/dev/shm/r", "--index-out", "/tmp/s");
            return 0;
        });
        assertEquals(Path.of("/tmp/s"), old.sampleList);
        assertEquals(Path.of("/tmp/a"), old.autoWorkersLog);
        // Once in this process: another test of this JVM may have said it already (the made-up
        // option's test shows a first use says it).
        List<String> lines = said[2].lines().toList();
        assertTrue(
                List.of(
                                "stoke: --index-out is deprecated and goes in the next release: use --sample-list-out",
                                "stoke: --tuning-out is deprecated and goes in the next release: use"
                                        + " --auto-workers-log")
                        .containsAll(lines),
                said[2]);
        assertEquals(lines.stream().distinct().count(), lines.size(), said[2]);
    }

    @Test
    void aShardOutOfRangeIsAUsageErrorBeforeAnythingStarts() {
        String[] r = BenchCommandTest.run("bench", "/nonexistent-but-never-read", "--rank", "2", "--world-size", "2");
        assertNotEquals("0", r[0]);
        assertTrue((r[1] + r[2]).contains("no such file") || (r[1] + r[2]).contains("--rank"), r[1] + r[2]);
    }
}
