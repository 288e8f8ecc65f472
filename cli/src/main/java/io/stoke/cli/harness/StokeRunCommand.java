package io.stoke.cli.harness;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.SampleIndex;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
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
 * simulated model time, and release the batch.
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

    @Option(names = "--dataset", required = true, description = "jpeg or raw")
    String dataset;

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

    @Option(names = "--transform", description = "eval (Resize 256 + CenterCrop 224) or train (RandomResizedCrop 224 + flip)")
    String transform = "eval";

    @Option(names = "--json", required = true)
    Path json;

    @Override
    public Integer call() throws IOException {
        long[] waits;
        long images = 0;
        long start;
        long end;
        if (dataset.equals("jpeg")) {
            SampleIndex index = ImageFolder.scan(root);
            TransformSpec spec = TransformSpec.defaults()
                    .withDctScaling(TransformSpec.DctScaling.valueOf(dctScaling.toUpperCase(Locale.ROOT)));
            spec = switch (transform) {
                case "eval" -> spec;
                case "train" -> spec.withTrain(224, io.stoke.loader.transform.RandomResizedCrop.defaults());
                default -> throw new IllegalArgumentException("--transform must be eval or train, not " + transform);
            };
            warmJit(index, spec);
            Loader.Builder builder = Loader.builder(index).batchSize(batchSize).workers(workers).slots(slots)
                    .transform(spec);
            int expected = (index.size() + batchSize - 1) / batchSize;
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
            waits = java.util.Arrays.copyOf(waits, k);
        } else if (dataset.equals("raw")) {
            List<Path> files = RawTensors.list(root);
            int[] labels = RawTensors.labels(files);
            warmRaw(files, labels);
            int expected = (files.size() + batchSize - 1) / batchSize;
            waits = new long[expected];
            int k = 0;
            System.out.println(BEGIN);
            System.out.flush();
            start = System.nanoTime();
            try (RawTensorLoader loader = new RawTensorLoader(files, labels, batchSize, workers, slots)) {
                long w0 = start;
                int slot;
                while ((slot = loader.next()) >= 0) {
                    waits[k] = System.nanoTime() - w0;
                    firstBatch();
                    images += loader.size(k);
                    k++;
                    consume(loader.pixels(slot).get(JAVA_BYTE, 0));
                    model();
                    loader.release(slot);
                    w0 = System.nanoTime();
                }
                end = System.nanoTime();
                System.out.println(END);
                System.out.flush();
            }
            waits = java.util.Arrays.copyOf(waits, k);
        } else {
            throw new IllegalArgumentException("--dataset must be jpeg or raw, not " + dataset);
        }
        writeJson(images, (end - start) / 1e9, waits);
        return 0;
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
     * Decodes some images untimed through a loader of the same settings, so that the timed run
     * meets compiled resize kernels, as a training job does after its first seconds.
     */
    private void warmJit(SampleIndex index, TransformSpec spec) {
        if (warmupImages <= 0) {
            return;
        }
        int seen = 0;
        try (Loader loader = Loader.builder(index).batchSize(Math.min(batchSize, 64)).workers(workers).slots(slots)
                .transform(spec).epochs(0).build()) {
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

    /**
     * Reads some batches untimed through a raw reader of the same settings, epoch after epoch, so
     * that a warm run's timed epoch meets compiled code, as the JPEG side's {@link #warmJit} does.
     */
    private void warmRaw(List<Path> files, int[] labels) {
        int seen = 0;
        while (seen < warmupImages && !files.isEmpty()) {
            try (RawTensorLoader loader = new RawTensorLoader(files, labels, batchSize, workers, slots)) {
                int slot;
                for (int k = 0; seen < warmupImages && (slot = loader.next()) >= 0; k++) {
                    firstBatch();
                    seen += loader.size(k);
                    loader.release(slot);
                }
            }
        }
    }

    private void writeJson(long images, double elapsedS, long[] waits) {
        new RunFigures(SummaryReport.STOKE, dataset, batchSize, workers, modelMs, warmupImages, images, waits.length,
                elapsedS, waits).write(json);
    }
}
