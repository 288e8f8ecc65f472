package io.stoke.bench.harness;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import com.sun.management.OperatingSystemMXBean;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.Workers;
import io.stoke.loader.autoworkers.AutoWorkersLog;
import io.stoke.loader.autoworkers.WorkerChange;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code autotune-run}: one run of the auto-workers benchmark in a process of its own, launched by
 * {@link AutotuneCommand}. The consumer takes each batch, touches it, and runs the model step:
 * a sleep (a model on an accelerator, which leaves the CPU to the loader), or a fixed amount of
 * arithmetic on its own thread (a model on the same cores), whose wall time per step is the figure.
 * Writes the rate, the process's CPU time less the consumer thread's (the producer's, JIT and GC
 * included), every step's time and the tuner's changes, as JSON.
 */
@Command(name = "autotune-run", hidden = true, description = "One run of the auto-workers benchmark (internal).")
public final class AutotuneRunCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "DIR")
    Path root;

    @Option(names = "--batch-size", required = true)
    int batchSize;

    @Option(names = "--workers", required = true, description = "N or auto")
    String workers;

    @Option(names = "--model-ms", description = "Sleep per batch.")
    double modelMs;

    @Option(names = "--spin-iterations", description = "Arithmetic per batch on the consumer's thread instead.")
    long spinIterations;

    @Option(names = "--steps-only", description = "Run the spin steps with no loader at all (the baseline).")
    int stepsOnly;

    @Option(names = "--epochs")
    int epochs = 1;

    @Option(names = "--warmup-images")
    int warmupImages;

    @Option(names = "--slots")
    int slots = 4;

    @Option(names = "--json", required = true)
    Path json;

    /** The run's figures, snake_case in the file. */
    record Figures(
            String workers,
            int batchSize,
            double modelMs,
            long spinIterations,
            long images,
            long batches,
            double elapsedS,
            double imagesPerS,
            double processCpuS,
            double consumerCpuS,
            double producerCpuS,
            double stallFraction,
            double waitP99Ms,
            double stepMsMedian,
            double stepMsMean,
            int activeWorkersAtEnd,
            List<Change> changes,
            double[] stepMs) {}

    record Change(double atS, int fromWorkers, int toWorkers, String reason) {}

    private static volatile long sink;

    @Override
    public Integer call() {
        OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        if (stepsOnly > 0) {
            for (int i = 0; i < 10; i++) {
                step(); // compiled before it is timed, as in a warm run
            }
            double[] steps = new double[stepsOnly];
            long t0 = System.nanoTime();
            long cpu0 = os.getProcessCpuTime();
            for (int i = 0; i < stepsOnly; i++) {
                steps[i] = step();
            }
            double elapsed = (System.nanoTime() - t0) / 1e9;
            double cpu = (os.getProcessCpuTime() - cpu0) / 1e9;
            write(new Figures(
                    "none",
                    batchSize,
                    0,
                    spinIterations,
                    0,
                    stepsOnly,
                    elapsed,
                    0,
                    cpu,
                    cpu,
                    0,
                    0,
                    0,
                    Stats.median(steps),
                    mean(steps),
                    0,
                    List.of(),
                    steps));
            return 0;
        }
        TransformSpec spec = StokeRunCommand.spec("jpeg", "eval", "POWERS_OF_TWO");
        try (Dataset dataset = StokeRunCommand.open("jpeg", root)) {
            warmUp(dataset, spec);
            List<Double> steps = new ArrayList<>();
            List<Double> waits = new ArrayList<>();
            long images = 0;
            long batches = 0;
            long waited = 0;
            long cpu0 = os.getProcessCpuTime();
            long consumer0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            AutoWorkersLog tuning;
            int activeAtEnd;
            try (Loader loader = Loader.builder(dataset)
                    .batchSize(batchSize)
                    .workers(Workers.parse(workers, 0))
                    .slots(slots)
                    .epochs(epochs)
                    .transform(spec)
                    .build()) {
                while (true) {
                    long w0 = System.nanoTime();
                    Batch b = loader.next();
                    if (b == null) {
                        break;
                    }
                    long wait = System.nanoTime() - w0;
                    waited += wait;
                    waits.add(wait / 1e6);
                    try (b) {
                        images += b.size();
                        batches++;
                        sink += b.pixels().get(JAVA_BYTE, 0);
                    }
                    steps.add(step());
                }
                tuning = loader.autoWorkers();
                activeAtEnd = loader.activeWorkers();
            }
            double elapsed = (System.nanoTime() - t0) / 1e9;
            double processCpu = (os.getProcessCpuTime() - cpu0) / 1e9;
            double consumerCpu = (threads.getCurrentThreadCpuTime() - consumer0) / 1e9;
            double[] stepMs = steps.stream().mapToDouble(Double::doubleValue).toArray();
            List<Change> changes = new ArrayList<>();
            if (tuning != null) {
                for (WorkerChange d : tuning.decisions()) {
                    changes.add(new Change(d.atNanos() / 1e9, d.fromWorkers(), d.toWorkers(), d.reason()));
                }
            }
            write(new Figures(
                    workers,
                    batchSize,
                    modelMs,
                    spinIterations,
                    images,
                    batches,
                    elapsed,
                    images / elapsed,
                    processCpu,
                    consumerCpu,
                    processCpu - consumerCpu,
                    waited / 1e9 / elapsed,
                    Stats.quantile(
                            waits.stream().mapToDouble(Double::doubleValue).toArray(), 0.99),
                    Stats.median(stepMs),
                    mean(stepMs),
                    activeAtEnd,
                    changes,
                    stepMs));
        }
        return 0;
    }

    /** One model step; its wall time in ms. */
    private double step() {
        long t0 = System.nanoTime();
        if (spinIterations > 0) {
            long x = 0x9E3779B97F4A7C15L;
            for (long i = 0; i < spinIterations; i++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
            }
            sink += x;
        } else if (modelMs > 0) {
            long deadline = t0 + (long) (modelMs * 1e6);
            long left;
            while ((left = deadline - System.nanoTime()) > 0) {
                LockSupport.parkNanos(left);
            }
        }
        return (System.nanoTime() - t0) / 1e6;
    }

    private void warmUp(Dataset dataset, TransformSpec spec) {
        int seen = 0;
        if (warmupImages <= 0) {
            return;
        }
        try (Loader loader = Loader.builder(dataset)
                .batchSize(Math.min(batchSize, 64))
                .slots(slots)
                .transform(spec)
                .epochs(0)
                .build()) {
            while (seen < warmupImages) {
                try (Batch b = loader.next()) {
                    seen += b.size();
                }
            }
        }
        for (int i = 0; i < 20 && spinIterations > 0; i++) {
            step(); // the spin loop compiled too
        }
    }

    private void write(Figures f) {
        try {
            HarnessJson.MAPPER.writeValue(json.toFile(), f);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + json, e);
        }
    }

    static double mean(double[] v) {
        return v.length == 0 ? 0 : Arrays.stream(v).average().orElse(0);
    }
}
