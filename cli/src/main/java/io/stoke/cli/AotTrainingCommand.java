package io.stoke.cli;

import io.stoke.loader.Batch;
import io.stoke.loader.RingConsumer;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.parquet.HubParquetWriter;
import io.stoke.serve.AnonymousFile;
import io.stoke.testdata.SyntheticImageNet;
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
 * it with the evaluation transform (uint8 and float32) and the training transform (and torchvision's recipes: TrivialAugmentWide with
 * RandomErasing into float32, RandAugment with bicubic, a bicubic evaluation), as tar shards and
 * as Parquet, then serves
 * it into rings that a consumer in this process drains, one in anonymous memory as stoke.DataLoader
 * runs it and one in /dev/shm; its
 * output discarded. With the cache a fresh process starts with those classes loaded and linked and with
 * the JIT's profiles, so it compiles the hot loop sooner and spends less of the cores doing so.
 */
@Command(
        name = "aot-training",
        hidden = true,
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
            String packed = dir.resolve("packed").toString();
            String raw = dir.resolve("raw").toString();
            String parquet = dir.resolve("parquet").toString();
            try (Dataset folder = ImageFolder.scan(dir.resolve("data"))) {
                HubParquetWriter.write(folder, Path.of(parquet), IMAGES / 2, IMAGES / 8);
            }
            String[][] runs = {
                {"bench", data, "--batch-size", "32", "--epochs", "3"},
                {"bench", data, "--batch-size", "32", "--output", "float32"},
                {"bench", data, "--batch-size", "32", "--epochs", "2", "--transform", "train", "--shuffle"},
                // torchvision's recipes as stoke.DataLoader translates them: ResNet50 v2's training transform
                // (TrivialAugmentWide, float32 after Normalize, RandomErasing) and a bicubic evaluation; their
                // classes and downcalls are otherwise loaded and linked in every fresh process's first batch.
                {
                    "bench",
                    data,
                    "--batch-size",
                    "32",
                    "--epochs",
                    "2",
                    "--transform",
                    "train",
                    "--shuffle",
                    "--resize",
                    "176",
                    "--crop",
                    "176",
                    "--augment",
                    "ta_wide:31,v2",
                    "--erase",
                    "0.1",
                    "--output",
                    "float32",
                    "--mean",
                    "0.485,0.456,0.406",
                    "--std",
                    "0.229,0.224,0.225"
                },
                {
                    "bench",
                    data,
                    "--batch-size",
                    "32",
                    "--epochs",
                    "2",
                    "--transform",
                    "train",
                    "--shuffle",
                    "--augment",
                    "ra:2:9:31",
                    "--interpolation",
                    "bicubic"
                },
                {
                    "bench",
                    data,
                    "--batch-size",
                    "32",
                    "--resize",
                    "232",
                    "--crop",
                    "224",
                    "--interpolation",
                    "bicubic",
                    "--output",
                    "float32",
                    "--mean",
                    "0.485,0.456,0.406",
                    "--std",
                    "0.229,0.224,0.225"
                },
                // Tar shards as stoke pack writes them: the scan, the mapped reads, the crop-only eval path, raw
                // copies.
                {"pack", data, "--out", packed, "--shard-size", "2M"},
                {"pack", data, "--out", raw, "--format", "raw", "--shard-size", "4M"},
                {"bench", packed, "--batch-size", "32", "--epochs", "3", "--shuffle"},
                {"bench", raw, "--batch-size", "32", "--epochs", "3"},
                // Parquet in the Hub's layout: footers, row group loads through parquet-java, reads in place.
                {"bench", parquet, "--batch-size", "32", "--epochs", "2", "--shuffle"},
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
            return serve(data, dir, err);
        } finally {
            System.setOut(out);
            System.setErr(err);
            deleteTree(dir);
        }
    }

    /**
     * {@code serve} as stoke.DataLoader runs it (its ring and sample list in anonymous files passed as
     * descriptors), then into a named ring in /dev/shm as {@code stoke serve} users run it; each
     * ring drained by a consumer in this process.
     */
    private static int serve(String data, Path dir, PrintStream err) {
        try (AnonymousFile ring = AnonymousFile.create("stoke-aot-ring");
                AnonymousFile samples = AnonymousFile.create("stoke-aot-sample-list")) {
            int rc = serve(data, ring.path(), samples.path(), err);
            if (rc != 0) {
                return rc;
            }
        } catch (IllegalStateException e) {
            err.println("stoke: aot-training: " + e.getMessage());
            return 1;
        }
        return serve(
                data,
                Path.of(
                        "/dev/shm",
                        "stoke-aot-training-" + ProcessHandle.current().pid()),
                dir.resolve("sample-list.json"),
                err);
    }

    private static int serve(String data, Path ring, Path index, PrintStream err) {
        int[] rc = {-1};
        Thread producer = Thread.ofPlatform()
                .name("aot-training-serve")
                .start(() -> rc[0] = Main.execute(
                        "serve",
                        data,
                        "--ring",
                        ring.toString(),
                        "--batch-size",
                        "32",
                        "--sample-list-out",
                        index.toString(),
                        "--parent-pid",
                        Long.toString(ProcessHandle.current().pid()),
                        "--status-interval",
                        "0"));
        long deadline = System.nanoTime() + 60_000_000_000L;
        RingConsumer consumer = null;
        while (consumer == null) {
            try {
                consumer = RingConsumer.attach(ring);
            } catch (RuntimeException notYet) {
                if (System.nanoTime() > deadline || !producer.isAlive()) {
                    err.println("stoke: aot-training: serve did not start: " + notYet.getMessage());
                    return 1;
                }
                Thread.onSpinWait();
            }
        }
        try (RingConsumer attached = consumer) {
            for (Batch b : attached) {
                b.close();
            }
        }
        try {
            producer.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        }
        if (rc[0] != 0) {
            err.println("stoke: aot-training: serve exited " + rc[0]);
        }
        return rc[0];
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
