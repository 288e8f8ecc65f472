package io.stoke.bench.harness;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.format.NpyHeader;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code stoke harness-run}: one timed Stoke run in a process of its own, launched by the harness
 * (which watches this process's memory and CPU). The consumer loop is the same as the PyTorch
 * script's: start the clock, create the loader, then for each batch time the wait, sleep the
 * simulated model time, and release the batch. Both datasets go through the same {@link Loader}:
 * the JPEG tree (read, decode, resize, crop), or the raw shards that the harness packed from it
 * ({@link RawTensors}), whose samples already have the output's size and are only copied from
 * the mapped shards into the batch.
 *
 * <p>Prints {@code @@harness begin} and {@code @@harness end} on stdout around the timed span so
 * that the harness can read the CPU clocks at those moments, and {@code @@harness first} when the
 * process receives its first batch; writes the figures as JSON.
 */
@Command(name = "harness-run", hidden = true, description = "One timed run for the benchmark harness (internal).")
public final class StokeRunCommand implements Callable<Integer> {
    /**
     * Printed when the process receives its first batch (a warm run's first untimed one), so that
     * the harness can time its start to that moment.
     */
    public static final String FIRST = "@@harness first";
    /** Printed just before the timed span starts. */
    public static final String BEGIN = "@@harness begin";
    /** Printed just after the last batch was consumed. */
    public static final String END = "@@harness end";

    @Parameters(index = "0", paramLabel = "DIR")
    Path root;

    @Option(
            names = "--dataset",
            required = true,
            description =
                    "jpeg (DIR is an ImageFolder tree) or raw (DIR is the harness's raw shards, read by the same Loader)")
    String kind;

    @Option(names = "--batch-size", required = true)
    int batchSize;

    @Option(names = "--workers", required = true)
    int workers;

    @Option(names = "--model-ms")
    double modelMs;

    /** Images taken untimed before the timed epoch: a warm run's; 0 for a cold one. */
    @Option(names = "--warmup-images")
    int warmupImages;

    @Option(names = "--slots")
    int slots = 4;

    @Option(names = "--dct-scaling")
    String dctScaling = "POWERS_OF_TWO";

    @Option(
            names = "--transform",
            description = "eval (Resize 256 + CenterCrop 224) or train (RandomResizedCrop 224 + flip)")
    String transform = "eval";

    @Option(names = "--json", required = true)
    Path json;

    /**
     * Takes the first batch, nothing timed, writes its pixels (uint8 [n, 224, 224, 3], no header)
     * here and stops: the harness compares them with torchvision's PIL path.
     */
    @Option(names = "--dump-first")
    Path dumpFirst;

    @Override
    public Integer call() {
        long[] waits;
        long images = 0;
        long start;
        long end;
        try (Dataset dataset = open(kind, root)) {
            TransformSpec spec = spec(kind, transform, dctScaling);
            if (dumpFirst != null) {
                dump(dataset, spec);
                return 0;
            }
            warmUp(dataset, spec);
            Loader.Builder builder = Loader.builder(dataset)
                    .batchSize(batchSize)
                    .workers(workers)
                    .slots(slots)
                    .transform(spec);
            int expected = (dataset.size() + batchSize - 1) / batchSize;
            waits = new long[expected];
            int k = 0;
            System.out.println(BEGIN);
            System.out.flush();
            start = System.nanoTime();
            try (Loader loader = builder.build()) {
                long w0 = start;
                while (true) {
                    Batch next = loader.next();
                    if (next == null) {
                        break;
                    }
                    waits[k++] = System.nanoTime() - w0;
                    firstBatch();
                    try (Batch b = next) {
                        images += b.size();
                        consume(b.pixels().get(JAVA_BYTE, 0));
                        model();
                    }
                    w0 = System.nanoTime();
                }
                end = System.nanoTime();
                System.out.println(END);
                System.out.flush();
            }
            waits = Arrays.copyOf(waits, k);
        }
        writeJson(images, (end - start) / 1e9, waits);
        return 0;
    }

    /**
     * The run's dataset. jpeg: the ImageFolder tree at {@code root}. raw: the raw shards at
     * {@code root} ({@link RawTensors}: {@code stoke pack --format raw}), every sample a 224x224x3
     * uint8 {@code .npy}, so that the loader copies it into the batch without decoding; anything
     * else there is refused rather than timed as something it is not. Close it after the loader.
     */
    public static Dataset open(String kind, Path root) {
        return switch (kind) {
            case "jpeg" -> ImageFolder.scan(root);
            case "raw" -> {
                Dataset dataset = Datasets.openLocalChecked(root.toString(), ErrorPolicy.FAIL, System.err::println);
                Shards shards = dataset instanceof ShardDataset sharded ? sharded.shards() : null;
                for (int i = 0; i < dataset.size(); i++) {
                    if (shards == null
                            || shards.format(i) != Shards.NPY
                            || shards.length(i)
                                    != NpyHeader.uint8(RawTensors.SIDE, RawTensors.SIDE, 3).length
                                            + RawTensors.SAMPLE_BYTES) {
                        dataset.close();
                        throw new IllegalArgumentException("--dataset raw needs the raw shards of 224x224x3 uint8 .npy "
                                + "samples that the harness packs, not " + root);
                    }
                }
                yield dataset;
            }
            default -> throw new IllegalArgumentException("--dataset must be jpeg or raw, not " + kind);
        };
    }

    /**
     * What the loader makes of each sample. jpeg: Resize(256) + CenterCrop(224) (eval) or
     * RandomResizedCrop(224) + flip (train), uint8 HWC, at the given DCT scaling. raw: the
     * evaluation transform whatever {@code transform} says (the shards hold its output, so the
     * loader only copies each sample; the training transform is for JPEG runs).
     */
    public static TransformSpec spec(String kind, String transform, String dctScaling) {
        if (kind.equals("raw")) {
            return TransformSpec.defaults()
                    .withEval(RawTensors.RESIZE, RawTensors.SIDE)
                    .withOutput(TransformSpec.Output.UINT8_HWC);
        }
        TransformSpec spec = TransformSpec.defaults()
                .withDctScaling(TransformSpec.DctScaling.valueOf(dctScaling.toUpperCase(Locale.ROOT)));
        return switch (transform) {
            case "eval" -> spec;
            case "train" -> spec.withTrain(224, RandomResizedCrop.defaults());
            default -> throw new IllegalArgumentException("--transform must be eval or train, not " + transform);
        };
    }

    private static volatile byte sink;

    private boolean saidFirst;

    /** Says, once, that the process has its first batch. */
    private void firstBatch() {
        if (!saidFirst) {
            saidFirst = true;
            System.out.println(FIRST);
            System.out.flush();
        }
    }

    private static void consume(byte b) {
        sink = b; // the consumer touches the batch, so it must really be there
    }

    /** Sleeps the simulated model time: a model on an accelerator leaves the CPU to the loader. */
    private void model() {
        if (modelMs <= 0) {
            return;
        }
        long deadline = System.nanoTime() + (long) (modelMs * 1e6);
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }

    /**
     * Takes some images untimed through a loader of the same settings (batches of at most 64,
     * epoch after epoch), closed before the timed one is built, so that the timed run meets
     * compiled code (the resize kernels, on JPEG), as a training job does after its first seconds.
     */
    private void warmUp(Dataset dataset, TransformSpec spec) {
        if (warmupImages <= 0) {
            return;
        }
        int seen = 0;
        try (Loader loader = Loader.builder(dataset)
                .batchSize(Math.min(batchSize, 64))
                .workers(workers)
                .slots(slots)
                .transform(spec)
                .epochs(0)
                .build()) {
            while (seen < warmupImages) {
                Batch b = loader.next();
                if (b == null) {
                    break;
                }
                firstBatch();
                try (b) {
                    seen += b.size();
                }
            }
        }
    }

    /** Writes the first batch's pixels to {@link #dumpFirst}. */
    private void dump(Dataset dataset, TransformSpec spec) {
        try (Loader loader = Loader.builder(dataset)
                        .batchSize(batchSize)
                        .workers(workers)
                        .slots(slots)
                        .transform(spec)
                        .build();
                Batch b = loader.next();
                FileChannel out = FileChannel.open(
                        dumpFirst,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE,
                        StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer pixels =
                    b.pixels().asSlice(0, b.size() * b.sample(0).byteSize()).asByteBuffer();
            while (pixels.hasRemaining()) {
                out.write(pixels);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + dumpFirst, e);
        }
    }

    private void writeJson(long images, double elapsedS, long[] waits) {
        new RunFigures(
                        SummaryReport.STOKE,
                        kind,
                        batchSize,
                        workers,
                        modelMs,
                        warmupImages,
                        images,
                        waits.length,
                        elapsedS,
                        waits)
                .write(json);
    }
}
