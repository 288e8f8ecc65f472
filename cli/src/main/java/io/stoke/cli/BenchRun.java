package io.stoke.cli;

import io.stoke.loader.Batch;
import io.stoke.loader.gpu.DeviceBatch;
import io.stoke.loader.gpu.DeviceStage;
import io.stoke.loader.gpu.DeviceStageStats;
import io.stoke.loader.Loader;
import io.stoke.loader.LoaderStats;
import io.stoke.loader.SampleError;
import io.stoke.loader.SampleException;
import io.stoke.loader.source.SampleIndex;
import io.stoke.loader.transform.FileReader;
import io.stoke.loader.transform.SampleStatus;
import java.io.PrintStream;
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

    /** Warms the page cache and the JIT before a timed run, unless {@code warmup} asks for a cold start. */
    void prepare(WarmupOptions warmup, SampleIndex index, Loader.Builder untimed) {
        if (!warmup.noWarmup) {
            warmPageCache(index);
            warmJit(untimed.epochs(0), warmup.warmupImages);
        }
    }

    /** Reads every file once so that the timed run finds the page cache warm. */
    void warmPageCache(SampleIndex index) {
        long bytes = 0;
        try (FileReader reader = new FileReader(index, Long.MAX_VALUE)) {
            for (int i = 0; i < index.size(); i++) {
                if (reader.read(i) == SampleStatus.OK) {
                    bytes += reader.length();
                }
            }
        }
        err.printf(Locale.ROOT, "page cache warmed: %d files, %.1f MB read once before timing%n", index.size(), bytes / 1e6);
    }

    /**
     * Runs the loader untimed over the first {@code images} samples, so the timed run meets a
     * compiled resize kernel (the JIT compiles the Vector API code only after a few hundred
     * images) the way a long-running job does after its first seconds.
     */
    void warmJit(Loader.Builder builder, int images) {
        long start = System.nanoTime();
        int seen = 0;
        try (Loader loader = builder.build()) {
            while (seen < images) {
                Batch b;
                try {
                    b = loader.next();
                } catch (SampleException e) {
                    continue;
                }
                if (b == null) {
                    break;
                }
                try (b) {
                    seen += b.size();
                }
            }
        }
        err.printf(Locale.ROOT, "JIT warmed: %d images decoded untimed in %.2f s%n", seen, (System.nanoTime() - start) / 1e9);
    }

    /** @return the process exit code: 0, or {@link Main#EXIT_FAILED} when any batch failed */
    /**
     * What demo and bench do once they have an index: warm up as asked, run, print the figures.
     *
     * @return the exit code: 0, {@link Main#EXIT_FAILED} when a batch failed, or
     *     {@link GpuCheckCommand#EXIT_NO_GPU} when {@code --device cuda} found no usable GPU
     */
    int execute(LoaderOptions options, WarmupOptions warmup, SampleIndex index, String title) {
        try {
            prepare(warmup, index, options.builder(index));
            return run(options.builder(index), title, options.epochs, warmup.json, options.device, options.deviceNormalize);
        } catch (io.stoke.loader.gpu.DeviceUnavailableException e) {
            err.println("stoke: " + e.getMessage());
            return GpuCheckCommand.EXIT_NO_GPU;
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
        int ordinal = 0;
        if (!auto) {
            if (!d.equals("cuda") && !d.startsWith("cuda:")) {
                throw new IllegalArgumentException("--device must be host, auto, cuda or cuda:N, not " + device);
            }
            ordinal = d.equals("cuda") ? 0 : Integer.parseInt(d.substring(5));
        }
        DeviceStage.Builder b = DeviceStage.builder(loader).device(ordinal);
        if (normalize) {
            b.normalizeOnDevice();
        }
        if (auto) {
            return DeviceStage.openOrHost(b, reason -> err.println("stoke: " + reason)).orElse(null);
        }
        DeviceStage stage = b.build();
        err.println("stoke: GPU stage open on CUDA device " + ordinal);
        return stage;
    }

    private int run(Loader.Builder builder, String title, long epochs, java.nio.file.Path json, String device,
                    boolean normalize) {
        List<SampleError> failed = new ArrayList<>();
        List<SampleError> skipped = new ArrayList<>();
        LoaderStats stats;
        int workers;
        int batchSize;
        DeviceStageStats deviceStats = null;
        try (Loader loader = builder.build(); DeviceStage stage = openDevice(loader, device, normalize)) {
            workers = loader.workers();
            batchSize = loader.sampler().batchSize();
            long total = loader.sampler().samplesPerEpoch() * epochs;
            Progress progress = new Progress(err, total);
            while (true) {
                try {
                    if (stage == null) {
                        Batch batch = loader.next();
                        if (batch == null) {
                            break;
                        }
                        try (batch) {
                            skipped.addAll(batch.skipped());
                            progress.advance(batch.size());
                        }
                    } else {
                        DeviceBatch batch = stage.next();
                        if (batch == null) {
                            break;
                        }
                        try (batch) {
                            batch.synchronize(); // as a training step would before using it
                            skipped.addAll(batch.skipped());
                            progress.advance(batch.size());
                        }
                    }
                } catch (SampleException e) {
                    failed.addAll(e.errors());
                    progress.advance(batchSize);
                }
            }
            progress.finish();
            stats = loader.stats();
            if (stage != null) {
                deviceStats = stage.stats();
            }
        }
        printTable(title, stats, workers, batchSize);
        if (deviceStats != null) {
            row("GPU stage", String.format(Locale.ROOT, "%d batches, %.1f MB to the device, at most %d on it at once",
                    deviceStats.batches(), deviceStats.bytesToDevice() / 1e6, deviceStats.maxOnDevice()));
        }
        if (json != null) {
            writeJson(json, stats, workers, batchSize, failed.size());
        }
        for (SampleError e : skipped) {
            out.println("skipped: " + e);
        }
        for (SampleError e : failed) {
            out.println("FAILED: " + e);
        }
        if (!failed.isEmpty()) {
            out.printf(Locale.ROOT, "%d file(s) failed to decode; their batches were not delivered (--on-error skip goes on past them)%n",
                    failed.size());
            return Main.EXIT_FAILED;
        }
        return 0;
    }

    private void printTable(String title, LoaderStats s, int workers, int batchSize) {
        out.println();
        out.println(title);
        row("images", String.format(Locale.ROOT, "%d in %d batches (%d skipped or failed)", s.images(), s.batches(), s.skipped()));
        row("elapsed", String.format(Locale.ROOT, "%.2f s", s.elapsedNanos() / 1e9));
        row("throughput", String.format(Locale.ROOT, "%.0f images/s", s.imagesPerSecond()));
        row("read rate", String.format(Locale.ROOT, "%.1f MB/s of JPEG", s.megabytesPerSecond()));
        row("time to first batch", String.format(Locale.ROOT, "%.1f ms", s.timeToFirstBatchNanos() / 1e6));
        row("consumer wait p50", String.format(Locale.ROOT, "%.2f ms per batch", s.waitQuantileNanos(0.50) / 1e6));
        row("consumer wait p99", String.format(Locale.ROOT, "%.2f ms per batch", s.waitQuantileNanos(0.99) / 1e6));
        row("workers", Integer.toString(workers));
        row("batch size", Integer.toString(batchSize));
    }

    /** The figures and every batch's wait, for scripts (the benchmark harness reads this). */
    private void writeJson(java.nio.file.Path file, LoaderStats s, int workers, int batchSize, int failed) {
        StringBuilder waits = new StringBuilder();
        for (long w : s.waitNanos()) {
            waits.append(waits.isEmpty() ? "" : ",").append(w);
        }
        String json = String.format(Locale.ROOT, "{\"loader\":\"stoke\",\"workers\":%d,\"batch_size\":%d,\"images\":%d,"
                        + "\"batches\":%d,\"skipped\":%d,\"failed\":%d,\"elapsed_s\":%.6f,\"images_per_s\":%.3f,"
                        + "\"time_to_first_batch_s\":%.6f,\"wait_ns\":[%s]}%n",
                workers, batchSize, s.images(), s.batches(), s.skipped(), failed, s.elapsedNanos() / 1e9,
                s.imagesPerSecond(), s.timeToFirstBatchNanos() / 1e9, waits);
        try {
            java.nio.file.Files.writeString(file, json);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot write " + file, e);
        }
    }

    private void row(String name, String value) {
        out.printf(Locale.ROOT, "  %-22s %s%n", name, value);
    }

    /** A one-line progress bar on a terminal; a line every few seconds otherwise. */
    private static final class Progress {
        private final PrintStream err;
        private final long total;
        private final boolean terminal;
        private final long start = System.nanoTime();
        private long done;
        private long lastDraw;

        Progress(PrintStream err, long total) {
            this.err = err;
            this.total = Math.max(1, total);
            java.io.Console console = System.console();
            this.terminal = console != null && console.isTerminal();
        }

        void advance(long n) {
            done += n;
            long now = System.nanoTime();
            if (now - lastDraw > (terminal ? 100_000_000L : 5_000_000_000L)) {
                lastDraw = now;
                draw(now);
            }
        }

        private void draw(long now) {
            int width = 30;
            int filled = (int) Math.min(width, width * done / total);
            double rate = done * 1e9 / Math.max(1, now - start);
            String line = String.format(Locale.ROOT, "[%s%s] %d/%d images  %.0f images/s",
                    "#".repeat(filled), ".".repeat(width - filled), Math.min(done, total), total, rate);
            if (terminal) {
                err.print("\r" + line);
            } else {
                err.println(line);
            }
            err.flush();
        }

        void finish() {
            draw(System.nanoTime());
            if (terminal) {
                err.println();
            }
        }
    }
}
