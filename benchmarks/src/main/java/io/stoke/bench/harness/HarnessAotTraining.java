package io.stoke.bench.harness;

import io.stoke.cli.Main;
import io.stoke.testdata.SyntheticImageNet;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;

/**
 * The training run for benchmarks.jar's AOT cache, recorded once per build by {@code ./stoke
 * harness}: the CLI's own training run (the loader's paths), then the harness's timed run on both
 * transforms, so that a cold {@code harness-run} starts as a cold {@code stoke} does.
 */
@Command(name = "aot-training", hidden = true, description = "The training run for benchmarks.jar's AOT cache.")
final class HarnessAotTraining implements Callable<Integer> {
    @Override
    public Integer call() throws IOException {
        int rc = Main.execute("aot-training");
        if (rc != 0) {
            return rc;
        }
        Path dir = Files.createTempDirectory("stoke-harness-aot");
        PrintStream out = System.out;
        try {
            SyntheticImageNet.generate(dir.resolve("data"), new SyntheticImageNet.Options(128, 4, 7));
            System.setOut(new PrintStream(OutputStream.nullOutputStream()));
            for (String transform : new String[] {"eval", "train"}) {
                rc = HarnessMain.execute(
                        "harness-run",
                        dir.resolve("data").toString(),
                        "--dataset",
                        "jpeg",
                        "--batch-size",
                        "32",
                        "--workers",
                        "2",
                        "--transform",
                        transform,
                        "--json",
                        dir.resolve(transform + ".json").toString());
                if (rc != 0) {
                    return rc;
                }
            }
            return 0;
        } finally {
            System.setOut(out);
            try (Stream<Path> all = Files.walk(dir)) {
                all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
