package io.stoke.tune;

import ai.onnxruntime.OrtException;
import io.stoke.embed.Embedder;
import io.stoke.loader.Batch;
import io.stoke.loader.transform.TransformSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The real consumer: an ONNX model ({@link Embedder}) run on each batch where it lies in the ring. */
public final class ModelStep implements Step {
    /** The shortest time the step's runs are timed over, so that the process's CPU time is read well. */
    static final double CPU_WINDOW_SECONDS = 0.2;

    private final Embedder embedder;
    private final Path model;
    private final int intraOpThreads;

    /** Takes {@code embedder} over; closing the step closes it. */
    public ModelStep(Embedder embedder, Path model, int intraOpThreads) {
        this.embedder = embedder;
        this.model = model;
        this.intraOpThreads = intraOpThreads;
    }

    /** The loader's transform the model's input asks for (its layout, its side), from {@code eval}. */
    public TransformSpec transform(TransformSpec eval) {
        return embedder.contract().transform(eval);
    }

    @Override
    public void run(Batch batch) throws Exception {
        embedder.embed(batch);
    }

    /**
     * Times the model on one batch of {@code batchSize} with the loader idle: one untimed run (ONNX
     * Runtime sizes its buffers for a new batch size on the first), then timed runs until three
     * or the budget, and at least {@value #CPU_WINDOW_SECONDS} s (the process's CPU clock is read
     * in coarse ticks); the median run, and the cores the runs kept busy.
     */
    @Override
    public StepCost cost(int batchSize, BatchSupplier loader, double budgetSeconds) throws Exception {
        return loader.withOneBatch(batchSize, batch -> {
            embedder.embed(batch);
            List<Long> runs = new ArrayList<>();
            long cpu0 = MachineLoad.processCpuNanos();
            long start = System.nanoTime();
            while (true) {
                long t = System.nanoTime();
                embedder.embed(batch);
                long now = System.nanoTime();
                runs.add(now - t);
                double elapsed = (now - start) / 1e9;
                if ((runs.size() >= 3 || elapsed >= budgetSeconds) && elapsed >= CPU_WINDOW_SECONDS) {
                    break;
                }
            }
            long wall = System.nanoTime() - start;
            double cores = (MachineLoad.processCpuNanos() - cpu0) / (double) wall;
            long[] done = runs.stream().mapToLong(Long::longValue).sorted().toArray();
            int n = done.length;
            double median = n % 2 == 1 ? done[n / 2] : (done[n / 2 - 1] + done[n / 2]) / 2.0;
            int max = Runtime.getRuntime().availableProcessors();
            return new StepCost(batchSize, median / 1e9, Math.min(max, Math.max(0, cores)), true);
        });
    }

    @Override
    public String describe() {
        return String.format(
                Locale.ROOT,
                "ONNX model %s (%s %s, %d operator threads)",
                model.getFileName(),
                embedder.contract().inputName(),
                embedder.contract().layout(),
                intraOpThreads);
    }

    @Override
    public void close() {
        try {
            embedder.close();
        } catch (OrtException e) {
            throw new IllegalStateException("cannot close the model's session: " + e.getMessage(), e);
        }
    }
}
