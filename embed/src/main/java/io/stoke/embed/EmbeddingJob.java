package io.stoke.embed;

import ai.onnxruntime.OrtException;
import com.sun.management.OperatingSystemMXBean;
import io.stoke.loader.Batch;
import io.stoke.loader.BatchSource;
import io.stoke.loader.BatchView;
import io.stoke.loader.Loader;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.source.Dataset;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongConsumer;
import java.util.function.ToIntFunction;

/**
 * One pass of a loader through a model into an {@link EmbeddingSink}: each batch is embedded
 * where it lies while the loader's workers decode the next ones into the ring's other slots, and
 * each sample's row is written at its place in dataset order (torchvision's ImageFolder order, or
 * the list file's; for a shard, the shard's samples in that order), whatever order batches come in.
 */
public final class EmbeddingJob {
    /** What a finished run measured. */
    public record Figures(
            long images,
            long batches,
            long skipped,
            long elapsedNanos,
            long modelNanos,
            long waitNanos,
            long cpuNanos,
            long decodeNanos) {
        public double imagesPerSecond() {
            return images * 1e9 / Math.max(1, elapsedNanos);
        }

        public double modelMillisPerBatch() {
            return modelNanos / 1e6 / Math.max(1, batches);
        }

        public double waitMillisPerBatch() {
            return waitNanos / 1e6 / Math.max(1, batches);
        }

        /** Process CPU time (every thread: decoding, inference, the rest) per image. */
        public double cpuMillisPerImage() {
            return cpuNanos / 1e6 / Math.max(1, images);
        }

        /** The loader's workers' CPU time per image (read, decode, resize: their share of the CPU). */
        public double decodeMillisPerImage() {
            return decodeNanos / 1e6 / Math.max(1, images);
        }
    }

    private EmbeddingJob() {}

    /**
     * The dataset indices an epoch of {@code sampler} delivers, padding left out (each sample is
     * embedded once over all ranks), sorted: row r of the output is sample {@code rows[r]}.
     */
    public static int[] rows(Sampler sampler, long epoch) {
        int[] order = Arrays.copyOf(sampler.order(epoch), sampler.unpaddedSamples());
        Arrays.sort(order);
        return order;
    }

    /** The files of {@code rows}, for paths.txt. */
    public static List<String> paths(Dataset dataset, int[] rows) {
        List<String> paths = new ArrayList<>(rows.length);
        for (int r : rows) {
            paths.add(dataset.name(r));
        }
        return paths;
    }

    /**
     * Runs {@code loader} (one epoch, built by the caller with the embedder's transform) through
     * {@code embedder} into {@code output}, whose rows are {@code rows}. Under policy FAIL a bad
     * file ends the run with the loader's {@link io.stoke.loader.error.SampleException}; under SKIP its
     * row stays zeros and it is listed in skipped.txt. Does not commit the output.
     *
     * @param cpuMark {@link #processCpuNanos()} taken before the loader was built: the process's CPU
     *     time, and its decoding threads' (from their start), are counted from then, one window, so
     *     the slots the workers filled before the run (while the output was made) count in both
     * @param progress told the number of images after each batch
     */
    public static Figures run(
            Loader loader, Embedder embedder, EmbeddingSink output, int[] rows, long cpuMark, LongConsumer progress)
            throws OrtException {
        return run(loader, embedder::embed, Batch::paddedCount, embedder, output, rows, cpuMark, progress);
    }

    /** The process's CPU time, every thread's, in nanoseconds: the mark a run's figures count from. */
    public static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /**
     * How a batch of a source is embedded: {@link Embedder#embed(MemorySegment, long[])} on its
     * pixels in host memory, or {@link Embedder#embedOnDevice} on a device batch where it lies.
     *
     * @return the batch's rows, as the embedder gives them (valid until its next run)
     */
    @FunctionalInterface
    public interface Inference<B> {
        MemorySegment embed(B batch) throws OrtException;
    }

    /**
     * As {@link #run(Loader, Embedder, EmbeddingSink, int[], long, LongConsumer)}, over any source of
     * one epoch's batches: the GPU decode stage's device batches as well as a loader's.
     *
     * @param inference how a batch is embedded by {@code embedder}: a slot's pixels, a device batch
     *     copied into host memory, or one read on the device
     * @param padded how many of a batch's last samples are padding (another rank's), not embedded
     * @param cpuMark {@link #processCpuNanos()} taken before the source was made (its threads' start)
     */
    public static <B extends BatchView> Figures run(
            BatchSource<B> source,
            Inference<? super B> inference,
            ToIntFunction<? super B> padded,
            Embedder embedder,
            EmbeddingSink output,
            int[] rows,
            long cpuMark,
            LongConsumer progress)
            throws OrtException {
        long dimension = embedder.contract().dimension();
        WorkerCpu workerCpu = new WorkerCpu();
        long start = System.nanoTime();
        long images = 0;
        long batches = 0;
        long skipped = 0;
        long modelNanos = 0;
        long waitNanos = 0;
        while (true) {
            long asked = System.nanoTime();
            B next = source.next();
            waitNanos += System.nanoTime() - asked;
            if (next == null) {
                break;
            }
            try (B batch = next) {
                MemorySegment values = inference.embed(batch);
                modelNanos += embedder.lastRunNanos();
                List<SampleError> errors = batch.skipped();
                int e = 0;
                // Consecutive decoded samples with consecutive rows (a whole batch, in dataset
                // order) go out in one write: a write per run of rows, not per image.
                int runStart = -1;
                int runRow = -1;
                int real = batch.size() - padded.applyAsInt(batch); // padding: another rank's samples
                for (int i = 0; i < real; i++) {
                    long sample = batch.index(i);
                    int row = Arrays.binarySearch(rows, (int) sample);
                    if (row < 0) {
                        throw new IllegalStateException(
                                "the loader delivered sample " + sample + ", not in this run's rows");
                    }
                    boolean bad = e < errors.size() && errors.get(e).position() == i;
                    if (runStart >= 0 && (bad || row != runRow + (i - runStart))) {
                        writeRun(output, values, dimension, runStart, i, runRow);
                        runStart = -1;
                    }
                    if (bad) {
                        SampleError error = errors.get(e++);
                        output.skip(row, error.path().toString(), error.status() + ": " + error.detail());
                        skipped++;
                    } else if (runStart < 0) {
                        runStart = i;
                        runRow = row;
                    }
                }
                if (runStart >= 0) {
                    writeRun(output, values, dimension, runStart, real, runRow);
                }
                images += real;
                batches++;
                workerCpu.sample();
                progress.accept(images);
            }
        }
        long elapsed = System.nanoTime() - start;
        workerCpu.sample();
        return new Figures(
                images,
                batches,
                skipped,
                elapsed,
                modelNanos,
                waitNanos,
                processCpuNanos() - cpuMark,
                workerCpu.total());
    }

    /** Samples {@code [from, to)} of a batch's embeddings, whose rows start at {@code firstRow}. */
    private static void writeRun(
            EmbeddingSink output, MemorySegment values, long dimension, int from, int to, int firstRow) {
        output.writeRows(firstRow, to - from, values.asSlice(4L * dimension * from, 4L * dimension * (to - from)));
    }

    /**
     * CPU time of the threads that read and decode, from their start: the loader's workers, or the
     * GPU decode stage's readers and decoder thread (nvJPEG's host side), all made by the source,
     * after the run's CPU mark. Looked for after each batch, since auto workers start them during
     * the run too. Read after each batch while they live (they end on their own after the last
     * sample, so the last batch's share may be missed).
     */
    private static final class WorkerCpu {
        private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        private final Map<Long, Long> seen = new HashMap<>(); // a decoding thread's latest CPU time
        private final Set<Long> others = new HashSet<>(); // threads that do not decode, asked once

        void sample() {
            for (long id : threads.getAllThreadIds()) {
                if (seen.containsKey(id) || others.contains(id)) {
                    continue;
                }
                ThreadInfo t = threads.getThreadInfo(id);
                if (t != null
                        && (t.getThreadName().startsWith("stoke-worker-")
                                || t.getThreadName().startsWith("stoke-gpu-reader-")
                                || t.getThreadName().equals("stoke-gpu-decoder"))) {
                    seen.put(id, 0L);
                } else if (t != null) {
                    others.add(id);
                }
            }
            for (var e : seen.entrySet()) {
                long cpu = threads.getThreadCpuTime(e.getKey());
                if (cpu > e.getValue()) {
                    e.setValue(cpu);
                }
            }
        }

        long total() {
            return seen.values().stream().mapToLong(Long::longValue).sum();
        }
    }
}
