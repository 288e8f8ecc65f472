package io.stoke.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.stoke.gpu.DecodeThreadTimes;
import io.stoke.gpu.DeviceStage;
import io.stoke.gpu.DeviceStageStats;
import io.stoke.gpu.DeviceUnavailableException;
import io.stoke.gpu.GpuDecodeOpening;
import io.stoke.gpu.GpuDecodeStage;
import io.stoke.gpu.GpuDecodeStats;
import io.stoke.gpu.GpuJpegDecoder;
import io.stoke.gpu.OpeningTimes;
import io.stoke.gpu.ReaderTimes;
import io.stoke.loader.Batch;
import io.stoke.loader.BatchSource;
import io.stoke.loader.BatchView;
import io.stoke.loader.Loader;
import io.stoke.loader.LoaderStats;
import io.stoke.loader.autoworkers.AutoWorkersLog;
import io.stoke.loader.cache.RestartCacheEpochs;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.serve.AutoWorkersLogFile;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Runs a loader to the end, drawing progress, and prints the figures: what demo and bench share. */
final class BenchRun {
    private final PrintStream out;
    private final PrintStream err;

    BenchRun(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** Warms the page cache, and the JIT when {@code warmup} asks for it, unless it asks for a cold read. */
    void prepare(WarmupOptions warmup, Dataset dataset, Loader.Builder untimed) {
        if (!warmup.noWarmup) {
            warmPageCache(dataset, untimed.transform().maxFileBytes());
            if (warmup.warmupImages > 0) {
                warmJit(untimed, warmup.warmupImages);
            } else {
                err.println(
                        "timing a fresh process (cold JIT): no untimed warm-up; --warmup-images N times a warm one");
            }
        }
    }

    /**
     * Reads every file (or loads every shard member's mapped pages) once so that the timed run finds
     * the page cache warm: those the loader reads, within its budget of {@code maxFileBytes} (a file
     * over it is never read, and reading it whole here could take all memory).
     */
    void warmPageCache(Dataset dataset, long maxFileBytes) {
        long bytes = 0;
        try (SampleReader reader = dataset.reader(maxFileBytes)) {
            for (int i = 0; i < dataset.size(); i++) {
                if (reader.read(i) == SampleStatus.OK) {
                    bytes += reader.length();
                    if (reader.bytes().isMapped()) {
                        reader.bytes().load();
                    }
                }
            }
        }
        err.printf(
                Locale.ROOT,
                "page cache warmed: %d files, %.1f MB read once before timing%n",
                dataset.size(),
                bytes / 1e6);
    }

    /**
     * Runs the loader untimed over {@code images} samples, so the timed run meets JIT-compiled code
     * the way a long-running job does after its first seconds (off by default: with Stoke's C
     * library a fresh process runs near its warm rate). It counts samples tried, decoded or not, and
     * skips bad files whatever the timed run's policy, so it always ends: a dataset of bad files
     * ends it after one epoch ({@link NoSampleDecodedException}), and the timed run names them.
     */
    void warmJit(Loader.Builder builder, int images) {
        long start = System.nanoTime();
        long tried = 0;
        long decoded = 0;
        try (Loader loader = builder.epochs(0).onError(ErrorPolicy.SKIP).build()) {
            while (tried < images) {
                try (Batch b = loader.next()) {
                    tried += b.size();
                    decoded += b.size() - b.skipped().size();
                }
            }
        } catch (NoSampleDecodedException e) {
            err.printf(
                    Locale.ROOT,
                    "JIT warm-up stopped: not one of %d files decoded (the run below names them)%n",
                    e.failed());
        }
        err.printf(
                Locale.ROOT,
                "JIT warmed: %d images decoded untimed (%d failed) in %.2f s%n",
                decoded,
                tried - decoded,
                (System.nanoTime() - start) / 1e9);
    }

    /**
     * What demo and bench do once they have an index: warm up as asked, run, print the figures.
     *
     * @return the exit code: 0, {@link Main#EXIT_FAILED} when a batch failed or nothing decoded, or
     *     {@link Main#EXIT_NO_DEVICE} when {@code --device cuda} found no usable GPU
     */
    int execute(LoaderOptions options, DeviceOptions device, WarmupOptions warmup, Dataset dataset, String title) {
        try {
            prepare(warmup, dataset, options.builder(dataset));
            GpuDecodeOpening.Decode decode = options.decode();
            if (decode.onGpu()) {
                Loader.Builder settings = options.builder(dataset);
                if (device.normalize) {
                    settings.transform(settings.transform().withOutput(TransformSpec.Output.FLOAT32_CHW));
                }
                int readers = Math.min(256, Math.max(1, options.workers().count()));
                long started = System.nanoTime(); // as the loader's clock starts before its workers do
                GpuDecodeStage stage = GpuDecodeOpening.open(
                        settings,
                        decode,
                        device.ordinal(),
                        readers,
                        options.decodeCpuBatches(),
                        options.decodeGpuThreads(),
                        false, // no model: the consumer only counts the batches
                        line -> err.println("stoke: " + line));
                if (stage != null) {
                    return runGpuDecode(stage, decode.shared(), started, settings, title, warmup.json, readers);
                }
            }
            return run(
                    options.builder(dataset),
                    title,
                    options.settings().longValue("epochs"),
                    warmup.json,
                    device.device,
                    device.normalize);
        } catch (DeviceUnavailableException e) {
            err.println("stoke: " + e.getMessage());
            return Main.EXIT_NO_DEVICE;
        }
    }

    /**
     * Opens the GPU stage over {@code loader} as {@code device} asks: null for host batches.
     *
     * @throws DeviceUnavailableException for {@code cuda[:N]} without a usable driver and device
     */
    private DeviceStage openDevice(Loader loader, String device, boolean normalize) {
        String d = device.toLowerCase(Locale.ROOT);
        if (d.equals("host")) {
            return null;
        }
        boolean auto = d.equals("auto");
        int ordinal = DeviceOptions.ordinalOf(device); // refuses anything but host, auto, cuda, cuda:N
        DeviceStage.Builder b = DeviceStage.builder(loader).device(ordinal);
        if (normalize) {
            b.normalizeOnDevice();
        }
        if (auto) {
            return DeviceStage.openOrHost(b, reason -> err.println("stoke: " + reason))
                    .orElse(null);
        }
        DeviceStage stage = b.build();
        err.println("stoke: GPU stage open on CUDA device " + ordinal);
        return stage;
    }

    private int run(Loader.Builder builder, String title, long epochs, Path json, String device, boolean normalize) {
        Tally tally;
        LoaderStats stats;
        int workers;
        int batchSize;
        AutoWorkersLog tuning;
        List<RestartCacheEpochs.Epoch> cacheEpochs;
        DeviceStageStats deviceStats = null;
        try (Loader loader = builder.build();
                DeviceStage stage = openDevice(loader, device, normalize)) {
            workers = loader.workers();
            tuning = loader.autoWorkers();
            batchSize = loader.sampler().batchSize();
            long total = loader.sampler().samplesPerEpoch() * epochs;
            tally = drain(stage != null ? stage : loader, total, batchSize);
            stats = loader.stats();
            cacheEpochs = List.copyOf(loader.restartCacheEpochs());
            if (stage != null) {
                deviceStats = stage.stats();
            }
        }
        printTable(title, stats, workers, batchSize);
        if (tuning != null) {
            printTuning(tuning);
        }
        printCacheEpochs(cacheEpochs);
        double transformMs = stats.images() == 0 ? Double.NaN : tally.transformNanos / 1e6 / stats.images();
        row(
                "worker time per image",
                Double.isNaN(transformMs)
                        ? "n/a"
                        : String.format(Locale.ROOT, "%.2f ms (read, decode, resize, crop)", transformMs));
        if (deviceStats != null) {
            row(
                    "GPU stage",
                    String.format(
                            Locale.ROOT,
                            "%d batches, %.1f MB to the device, at most %d on it at once",
                            deviceStats.batches(),
                            deviceStats.bytesToDevice() / 1e6,
                            deviceStats.maxOnDevice()));
        }
        if (json != null) {
            writeJson(json, "cpu", stats, workers, tuning, batchSize, tally.failed.size(), transformMs);
        }
        return report(tally);
    }

    /** With {@code --restart-cache-dir}: a row an epoch, saying when the cache starts to pay. */
    private void printCacheEpochs(List<RestartCacheEpochs.Epoch> epochs) {
        for (RestartCacheEpochs.Epoch e : epochs) {
            row("restart cache", e.sentence().substring("restart cache ".length()));
        }
    }

    /**
     * {@code --decode gpu}: the GPU decode stage over the loader's settings, with figures measured
     * here the way the loader measures its own (elapsed from the stage's start, the consumer's
     * wait per batch).
     */
    private int runGpuDecode(
            GpuDecodeStage stage,
            boolean shared,
            long started,
            Loader.Builder builder,
            String title,
            Path json,
            int readers) {
        Tally tally;
        GpuDecodeStats decoded;
        int batchSize = builder.sampler().batchSize();
        long total = builder.sampler().samplesPerEpoch() * builder.epochs();
        List<RestartCacheEpochs.Epoch> cacheEpochs;
        try (stage) {
            tally = drain(stage, total, batchSize);
            decoded = stage.stats();
            cacheEpochs = List.copyOf(stage.restartCacheEpochs());
        }
        long elapsed = tally.endNanos - started;
        LoaderStats stats = new LoaderStats(
                tally.batches,
                tally.images,
                tally.skipped.size() + tally.failed.size(),
                tally.sourceBytes,
                elapsed,
                tally.firstBatchNanos < 0 ? -1 : tally.firstBatchNanos - started,
                tally.waits.stream().mapToLong(Long::longValue).toArray(),
                null);
        printTable(title, stats, readers, batchSize);
        printCacheEpochs(cacheEpochs);
        double cpuMs = stats.images() == 0 ? Double.NaN : tally.transformNanos / 1e6 / stats.images();
        row(
                "CPU time per image",
                Double.isNaN(cpuMs)
                        ? "n/a"
                        : String.format(
                                Locale.ROOT,
                                "%.2f ms (read, nvJPEG's host side, what the CPU decodes; thread CPU time)",
                                cpuMs));
        row(
                "GPU decode",
                String.format(
                        Locale.ROOT,
                        "%d images by nvJPEG (%s), %d left to the CPU, %d failed",
                        decoded.gpuImages(),
                        stage.backend() == GpuJpegDecoder.Backend.HARDWARE ? "hardware engine" : "GPU hybrid",
                        decoded.cpuImages(),
                        decoded.failed()));
        DecodeThreadTimes t = decoded.times();
        double perBatch = decoded.batches() == 0 ? Double.NaN : 1e6 * decoded.batches(); // ns -> ms per batch
        row(
                "decode thread",
                String.format(
                        Locale.ROOT,
                        "ms per batch: reads %.2f, buffer %.2f, queue %.2f, nvJPEG host %.2f, resize host %.2f, "
                                + "CPU's part %.2f, handoff %.2f%s",
                        t.reads() / perBatch,
                        t.buffer() / perBatch,
                        t.queue() / perBatch,
                        t.nvjpeg() / perBatch,
                        t.resize() / perBatch,
                        t.cpu() / perBatch,
                        t.handoff() / perBatch,
                        t.gpuSpanBatches() == 0
                                ? ""
                                : String.format(Locale.ROOT, "; events %.2f", t.gpuSpan() / 1e6 / t.gpuSpanBatches())));
        ReaderTimes r = decoded.readers();
        double perImage = r.images() == 0 ? Double.NaN : 1e3 * r.images(); // ns -> us per file
        row(
                "reader threads",
                String.format(
                        Locale.ROOT,
                        "us per file read for the GPU, wall, all threads: read %.1f, nvJPEG's examination %.1f,"
                                + " training tables %.1f",
                        r.read() / perImage,
                        r.examine() / perImage,
                        r.tables() / perImage));
        OpeningTimes o = decoded.opening();
        row(
                "stage opening",
                String.format(
                        Locale.ROOT,
                        "ms: context %.1f, kernels %.1f, buffers and threads %.1f, nvJPEG %.1f, examiners %.1f,"
                                + " resize %.1f; %.1f in all%s",
                        o.context() / 1e6,
                        o.kernels() / 1e6,
                        o.buffers() / 1e6,
                        o.nvjpeg() / 1e6,
                        o.examiners() / 1e6,
                        o.resize() / 1e6,
                        o.total() / 1e6,
                        o.wholeMeanwhile() > 0
                                ? "; nvJPEG opened aside, " + o.wholeMeanwhile()
                                        + " whole batches began on the CPU threads meanwhile"
                                : ""));
        GpuDecodeStats.Balance b = decoded.balance();
        if (b != null) {
            row(
                    "split from",
                    String.format(
                            Locale.ROOT,
                            "us per image: GPU side %.1f (events %.1f, decode thread %.1f), CPU threads %.1f"
                                    + " (a round's wall; a thread %.2f us a KiB; %s)",
                            Math.max(b.gpuSpanNanos(), Double.isNaN(b.gpuHostNanos()) ? 0 : b.gpuHostNanos()) / 1e3,
                            b.gpuSpanNanos() / 1e3,
                            b.gpuHostNanos() / 1e3,
                            b.cpuNanos() / 1e3,
                            b.cpuThreadNanosPerKiB() / 1e3,
                            Double.isNaN(b.cpuWholeNanos())
                                    ? "no whole batch"
                                    : String.format(Locale.ROOT, "whole batches %.1f", b.cpuWholeNanos() / 1e3)));
        }
        if (shared) {
            row(
                    "CPU's share",
                    String.format(
                            Locale.ROOT,
                            "%d images (%.1f%%) decoded by the CPU threads beside the GPU: %d whole batches"
                                    + " (%d while batches waited for the consumer), the rest shares of the GPU's",
                            decoded.sharedImages(),
                            stats.images() == 0 ? 0 : 100.0 * decoded.sharedImages() / stats.images(),
                            decoded.cpuBatches(),
                            decoded.behindBatches()));
        }
        if (json != null) {
            // "gpu:2": each batch's nvJPEG call split over two threads, as model_decode.py names its cells.
            String decode = (shared ? "auto" : "gpu") + (stage.decodeThreads() > 1 ? ":" + stage.decodeThreads() : "");
            writeJson(json, decode, stats, readers, null, batchSize, tally.failed.size(), cpuMs);
        }
        return report(tally);
    }

    /** What {@link #drain} saw. */
    private static final class Tally {
        final List<SampleError> failed = new ArrayList<>();
        final List<SampleError> skipped = new ArrayList<>();
        final List<Long> waits = new ArrayList<>();
        NoSampleDecodedException nothing;
        long transformNanos;
        long batches;
        long images;
        long sourceBytes;
        long firstBatchNanos = -1;
        long endNanos;
    }

    /** Takes every batch from {@code source} as a training step would, drawing progress. */
    private Tally drain(BatchSource<?> source, long total, int batchSize) {
        Tally t = new Tally();
        ProgressBar progress = new ProgressBar(err, total);
        while (true) {
            long asked = System.nanoTime();
            try {
                BatchView batch = source.next();
                if (batch == null) {
                    break;
                }
                try (batch) {
                    batch.awaitReady(); // as a training step would before using it
                    long got = System.nanoTime();
                    t.waits.add(got - asked);
                    if (t.firstBatchNanos < 0) {
                        t.firstBatchNanos = got;
                    }
                    t.batches++;
                    t.images += batch.size();
                    t.sourceBytes += batch.stats().sourceBytes();
                    t.skipped.addAll(batch.skipped());
                    t.transformNanos += batch.stats().decodeNanos();
                    progress.advance(batch.size());
                }
            } catch (SampleException e) {
                t.failed.addAll(e.errors());
                progress.advance(batchSize);
            } catch (NoSampleDecodedException e) {
                t.nothing = e;
                break;
            }
        }
        t.endNanos = System.nanoTime();
        progress.finish();
        return t;
    }

    /** Names every skipped and failed sample; the exit code. */
    private int report(Tally t) {
        for (SampleError e : t.skipped) {
            out.println("skipped: " + e);
        }
        for (SampleError e : t.failed) {
            out.println("FAILED: " + e);
        }
        if (t.nothing != null) {
            out.printf(
                    Locale.ROOT,
                    "no file decoded: all %d samples of epoch %d failed (named above), so the run stopped "
                            + "there rather than go round the same files again%n",
                    t.nothing.failed(),
                    t.nothing.epoch());
            return Main.EXIT_FAILED;
        }
        if (!t.failed.isEmpty()) {
            out.printf(
                    Locale.ROOT,
                    "%d file(s) failed to decode; their batches were not delivered (--on-error skip goes on past them)%n",
                    t.failed.size());
            return Main.EXIT_FAILED;
        }
        return 0;
    }

    private void printTable(String title, LoaderStats s, int workers, int batchSize) {
        out.println();
        out.println(title);
        row(
                "images",
                String.format(
                        Locale.ROOT, "%d in %d batches (%d skipped or failed)", s.images(), s.batches(), s.skipped()));
        row("elapsed", String.format(Locale.ROOT, "%.2f s", s.elapsedNanos() / 1e9));
        row("throughput", String.format(Locale.ROOT, "%.0f images/s", s.imagesPerSecond()));
        row("read rate", String.format(Locale.ROOT, "%.1f MB/s of JPEG", s.megabytesPerSecond()));
        row("time to first batch", String.format(Locale.ROOT, "%.1f ms", s.timeToFirstBatchNanos() / 1e6));
        row("consumer wait p50", String.format(Locale.ROOT, "%.2f ms per batch", s.waitQuantileNanos(0.50) / 1e6));
        row("consumer wait p99", String.format(Locale.ROOT, "%.2f ms per batch", s.waitQuantileNanos(0.99) / 1e6));
        row("workers", Integer.toString(workers));
        row("batch size", Integer.toString(batchSize));
    }

    /** Auto workers: where they ended, and every change with its reason. */
    private void printTuning(AutoWorkersLog t) {
        out.print(AutoWorkersLogFile.summary(t));
    }

    /** The figures and every batch's wait, for scripts: what {@code --json FILE} writes. */
    record Figures(
            String loader,
            String decode,
            int workers,
            int batchSize,
            long images,
            long batches,
            long skipped,
            long failed,
            double elapsedS,
            double imagesPerS,
            double timeToFirstBatchS,
            double workerMsPerImage,
            boolean autoWorkers,
            int activeWorkersAtEnd,
            List<AutoWorkersLogFile.Change> workerChanges,
            long[] waitNs) {}

    private static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .build();

    private void writeJson(
            Path file,
            String decode,
            LoaderStats s,
            int workers,
            AutoWorkersLog tuning,
            int batchSize,
            int failed,
            double workerMsPerImage) {
        Figures f = new Figures(
                "stoke",
                decode,
                workers,
                batchSize,
                s.images(),
                s.batches(),
                s.skipped(),
                failed,
                s.elapsedNanos() / 1e9,
                s.imagesPerSecond(),
                s.timeToFirstBatchNanos() / 1e9,
                workerMsPerImage,
                tuning != null,
                tuning != null ? tuning.activeWorkers() : workers,
                tuning == null
                        ? List.of()
                        : tuning.decisions().stream()
                                .map(AutoWorkersLogFile.Change::of)
                                .toList(),
                s.waitNanos());
        try {
            JSON.writeValue(file.toFile(), f);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    private void row(String name, String value) {
        out.printf(Locale.ROOT, "  %-22s %s%n", name, value);
    }

    /** A one-line progress bar on a terminal; a line every few seconds otherwise. */
}
