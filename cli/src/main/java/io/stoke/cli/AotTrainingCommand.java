package io.stoke.cli;

import io.stoke.loader.dataset.SyntheticImageNet;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;

/**
 * {@code stoke aot-training} (hidden): the training run from which {@code ./stoke} records the
 * JVM's ahead-of-time cache ({@code -XX:AOTCacheOutput}, JDK 25's JEPs 483 and 515) once per
 * build. It loads, links and profiles what a fresh {@code demo}, {@code bench} or {@code serve}
 * would: it makes a small ImageNet-like dataset in a temporary folder and runs {@code bench} over
 * it with the evaluation transform (uint8 and float32) and the training transform, its output
 * discarded. With the cache a fresh process starts with those classes loaded and linked and with
 * the JIT's profiles, so it compiles the hot loop sooner and spends less of the cores doing so.
 */
@Command(name = "aot-training", hidden = true,
        description = "The training run for the JVM's AOT cache (./stoke runs it once per build).")
public final class AotTrainingCommand implements Callable<Integer> {
    private static final int IMAGES = 192;

    @Override
    public Integer call() throws IOException {
        Path dir = Files.createTempDirectory("stoke-aot-training");
        PrintStream out = System.out;
        PrintStream err = System.err;
        try {
            SyntheticImageNet.generate(dir.resolve("data"), new SyntheticImageNet.Options(IMAGES, 4, 7));
            String data = dir.resolve("data").toString();
            String[][] runs = {
                    {"bench", data, "--batch-size", "32", "--epochs", "3"},
                    {"bench", data, "--batch-size", "32", "--output", "float32"},
                    {"bench", data, "--batch-size", "32", "--epochs", "2", "--transform", "train", "--shuffle"},
            };
            PrintStream discard = new PrintStream(OutputStream.nullOutputStream());
            System.setOut(discard);
            System.setErr(discard);
            for (String[] run : runs) {
                int rc = Main.execute(run);
                if (rc != 0) {
                    err.println("stoke: aot-training: " + String.join(" ", run) + " exited " + rc);
                    return rc;
                }
            }
            return 0;
        } finally {
            System.setOut(out);
            System.setErr(err);
            deleteTree(dir);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.delete(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
