package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.sample.EpochCut;
import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.sample.Sampler.PartitionTail;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
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
import picocli.CommandLine.Model.OptionSpec;

/** Every command that drives a loader takes the same loader options, with the same defaults and help. */
class LoaderOptionsTest {
    private static final List<String> DRIVERS = List.of("demo", "bench", "serve", "embed", "tune");

    /** The option set the {@code LoaderOptions} class declares, as picocli reads it. */
    private static Map<String, String> declared() {
        return describe(CommandLine.Model.CommandSpec.forAnnotatedObject(new LoaderOptions())
                .options());
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
        for (String option : declared().keySet()) {
            String b = optionHelp(bench[1], option);
            assertFalse(b.isEmpty(), option + " missing from bench --help:\n" + bench[1]);
            assertEquals(b, optionHelp(serve[1], option), option);
        }
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
        try (Dataset dataset = LoaderOptions.openFailing(root)) {
            LoaderOptions pad = CommandLine.populateCommand(new LoaderOptions(), "--rank", "1", "--world-size", "2");
            Sampler s = pad.builder(dataset).sampler();
            assertEquals(PartitionTail.PAD, s.partitionTail());
            assertEquals(4, s.samplesPerEpoch());
            assertEquals(3, s.unpaddedSamples());
            LoaderOptions drop = CommandLine.populateCommand(
                    new LoaderOptions(), "--rank", "1", "--world-size", "2", "--shard-tail", "drop");
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
        try (Dataset dataset = LoaderOptions.openFailing(root)) {
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
            LoaderOptions otherSeed = CommandLine.populateCommand(
                    new LoaderOptions(), "--shuffle", "--seed", "8", "--start-state", states.toString());
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
        return CommandLine.populateCommand(new LoaderOptions(), args.toArray(String[]::new));
    }

    @Test
    void meanAndStdNormaliseTheFloatOutputWithImageNetsByDefault() {
        TransformSpec spec = CommandLine.populateCommand(new LoaderOptions()).transform();
        assertArrayEquals(TransformSpec.IMAGENET_MEAN, spec.mean());
        assertArrayEquals(TransformSpec.IMAGENET_STD, spec.std());
        spec = CommandLine.populateCommand(
                        new LoaderOptions(), "--output", "float32", "--mean", "0.5,0.25,0", "--std", "1,0.5,2")
                .transform();
        assertArrayEquals(new float[] {0.5f, 0.25f, 0f}, spec.mean());
        assertArrayEquals(new float[] {1f, 0.5f, 2f}, spec.std());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> CommandLine.populateCommand(new LoaderOptions(), "--mean", "0.5,0.5")
                        .transform());
        assertTrue(e.getMessage().contains("--mean and --std"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> CommandLine.populateCommand(new LoaderOptions(), "--std", "1,0,1")
                        .transform());
        assertTrue(e.getMessage().contains("--std must be three positive"), e.getMessage());
    }

    @Test
    void aShardOutOfRangeIsAUsageErrorBeforeAnythingStarts() {
        String[] r = BenchCommandTest.run("bench", "/nonexistent-but-never-read", "--rank", "2", "--world-size", "2");
        assertNotEquals("0", r[0]);
        assertTrue((r[1] + r[2]).contains("no such file") || (r[1] + r[2]).contains("--rank"), r[1] + r[2]);
    }
}
