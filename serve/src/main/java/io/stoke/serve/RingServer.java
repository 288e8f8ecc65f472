package io.stoke.serve;

import io.stoke.ffm.TurboJpeg;
import io.stoke.gpu.GpuDecodeOpening;
import io.stoke.gpu.GpuDecodeStage;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.source.Dataset;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingSpaceException;
import io.stoke.ring.ShmRing;
import io.stoke.ring.SlotCounts;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;

/**
 * {@code stoke serve} as a library: decodes a dataset into a shared-memory ring that a consumer in
 * another process reads (Java {@code RingConsumer}, Python {@code stoke}, or C against
 * {@code native/stoke_ring.h}), until the consumer has read every batch of the requested epochs.
 *
 * <p>It creates the ring, named ({@code /dev/shm/NAME}: its pages reserved at once, a ring that does
 * not fit one sentence) or inherited ({@code /dev/fd/N}, laid out in place); builds the loader from
 * {@link LoaderSettings}; writes the side files ({@link SampleList}, {@link AutoWorkersLogFile}, {@link
 * RestartCacheLogFile}); and runs one loop every 20 ms that says each auto-workers change and each
 * epoch's restart-cache counts, fails on a worker's failure, prints status
 * lines, and ends once every batch is published and read. A parent process given by pid is watched
 * from the start ({@link ParentWatch}). A clean end, Ctrl-C or SIGTERM closes the loader, the dataset
 * (once), the ring and the named side files; a crash leaves a ring file that the next server on the
 * same path replaces.
 */
public final class RingServer {
    /** The run ended: every batch was read. */
    public static final int EXIT_DONE = 0;
    /** The run failed (a ring that does not fit, nothing decodes, the parent is gone). */
    public static final int EXIT_FAILED = 1;

    private static final String SAYS = "stoke serve: ";

    private final String data;
    private final LoaderSetup setup;
    private final Path ring;
    private final PrintWriter err;
    private long statusIntervalMillis = 1000;
    private long stallReportMillis = 60_000;
    private Long parentPid;
    private Path sampleList;
    private Path autoWorkersLog;
    private Path restartCacheLog;
    private Path deviceSlotsOut;
    private boolean datasetClosed; // guarded by this
    private Thread shutdownHook; // registered while the ring lives, removed once the dataset is closed

    /**
     * A server of dataset {@code data} into {@code ring}, a path in a shared-memory file system or
     * {@code /dev/fd/N}.
     *
     * @param err where status lines and messages go
     */
    public RingServer(String data, LoaderSettings settings, Path ring, PrintWriter err) {
        this.data = data;
        this.setup = new LoaderSetup(settings);
        this.ring = ring;
        this.err = err;
    }

    /** Milliseconds between status lines, 0 for none (default 1000). */
    public RingServer statusInterval(long millis) {
        this.statusIntervalMillis = millis;
        return this;
    }

    /**
     * Milliseconds without a batch published, while the consumer waits, before the threads' states
     * are said once ({@link StallReport}), 0 for never (default 60,000).
     */
    public RingServer stallReport(long millis) {
        this.stallReportMillis = millis;
        return this;
    }

    /** Stop within 100 ms of process {@code pid} exiting, however it ends (null: no parent). */
    public RingServer parentPid(Long pid) {
        this.parentPid = pid;
        return this;
    }

    /** Write the {@link SampleList} to {@code file} before the ring is ready (null: none). */
    public RingServer sampleList(Path file) {
        this.sampleList = file;
        return this;
    }

    /** Append each auto-workers change to {@code file} ({@link AutoWorkersLogFile}; null: stderr only). */
    public RingServer autoWorkersLog(Path file) {
        this.autoWorkersLog = file;
        return this;
    }

    /**
     * Under {@code --decode gpu|auto}, keep each slot's pixels in device memory, opened by the
     * consumer by CUDA IPC, and describe the slots in {@code file} ({@link DeviceSlotsFile}) before the
     * first batch; where the CPU decodes after all, say so there (the pixels are then in the ring).
     * Null: in the ring, nothing written.
     */
    public RingServer deviceSlotsOut(Path file) {
        this.deviceSlotsOut = file;
        return this;
    }

    /**
     * Append each epoch's restart-cache counts to {@code file} ({@link RestartCacheLogFile}; null:
     * stderr only). Nothing is written without a restart cache.
     */
    public RingServer restartCacheLog(Path file) {
        this.restartCacheLog = file;
        return this;
    }

    /** Serves until the consumer has read every batch: {@link #EXIT_DONE}, or {@link #EXIT_FAILED} having said why. */
    public int run() throws Exception {
        // The parent is watched before anything else runs: a remote dataset's open alone can fetch
        // for minutes, and an orphan must stop within 100 ms wherever it is.
        ParentWatch watch = null;
        if (parentPid != null && (watch = ParentWatch.start(parentPid, "stoke serve", err)) == null) {
            return EXIT_FAILED;
        }
        try {
            Dataset dataset = setup.open(data);
            try {
                return serve(dataset);
            } finally {
                closeOnce(dataset);
                setup.close();
                removeShutdownHook();
            }
        } finally {
            if (watch != null) {
                watch.close();
            }
        }
    }

    /**
     * Closes the dataset the first time only (a mapped shard's arena refuses a second close); a
     * second caller waits for the first's close to end. The shutdown hook is one: a SIGTERM (stoke.DataLoader's
     * stop) that comes while the main thread closes the dataset after the last batch must not let the
     * JVM halt halfway, which left a shared shard cache's files behind (test_shared_node, on a loaded CI machine).
     */
    private synchronized void closeOnce(Dataset dataset) {
        if (!datasetClosed) {
            datasetClosed = true;
            dataset.close();
        }
    }

    private void removeShutdownHook() {
        Thread hook = shutdownHook;
        if (hook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // already shutting down: the hook is running or ran
            }
        }
    }

    private int serve(Dataset dataset) throws Exception {
        // A missing libturbojpeg0 is one sentence naming the package, before the ring exists; found
        // first by a worker, it was "a worker failed: java.lang.ExceptionInInitializerError".
        TurboJpeg.ensureLoaded();
        Loader.Builder builder = setup.builder(dataset); // checks every option before the ring exists
        if (sampleList != null) {
            SampleList.write(dataset, builder.sampler().shardWindow(), sampleList);
        }
        LoaderSettings s = setup.settings();
        RingGeometry geometry = Loader.geometryOf(s.integer("batch_size"), s.integer("slots"), setup.transform());
        ShmRing shm;
        try {
            shm = ShmRing.create(ring, geometry, msg -> say(msg));
        } catch (RingSpaceException e) {
            say(doesNotFit(e));
            SampleList.remove(sampleList);
            return EXIT_FAILED;
        }
        GpuDecodeOpening.Decode decode = GpuDecodeOpening.Decode.of(s.text("decode"));
        if (decode.onGpu()) {
            GpuDecodeStage stage;
            ErrorPolicy policy = builder.onError();
            try {
                // The stage gives a batch with a bad file under SKIP; FAIL then marks it failed (the publisher).
                builder.onError(ErrorPolicy.SKIP);
                int readers = Math.min(256, Math.max(1, setup.workers().count()));
                // With device slots the consumer reads the batches on the GPU, where its work runs.
                stage = GpuDecodeOpening.open(
                        builder,
                        decode,
                        0,
                        readers,
                        s.integer("decode_cpu_batches"),
                        s.integer("decode_gpu_threads"),
                        deviceSlotsOut != null,
                        this::say);
            } catch (RuntimeException | Error e) {
                shm.close();
                throw e;
            } finally {
                builder.onError(policy);
            }
            if (stage != null) {
                return serveFromGpu(dataset, stage, policy == ErrorPolicy.SKIP, builder.startBatch(), shm, geometry);
            }
        }
        if (deviceSlotsOut != null) {
            try {
                DeviceSlotsFile.onCpu().write(deviceSlotsOut); // the consumer waits for it: the CPU decodes
            } catch (RuntimeException e) {
                shm.close();
                throw e;
            }
        }
        Loader loader;
        try {
            loader = builder.ring(g -> shm.slots()).build();
        } catch (RuntimeException | Error e) {
            shm.close();
            throw e;
        }
        if (loader.resumed() != null) {
            say(loader.resumed().report());
        }
        // Ctrl-C / SIGTERM (stoke.DataLoader's close): stop the workers and remove the files like a
        // clean exit. The dataset is closed too, once no worker reads it: a shared shard cache's files
        // are removed by the last process that maps them, and a process that never closes its dataset
        // would leave them all behind. Once: the hook and serve's finally may both come here. The hook
        // stays until run() has closed the dataset, so a signal during that close waits for its end.
        Thread hook = new Thread(() -> {
            loader.close();
            closeOnce(dataset);
            shm.close();
            SampleList.remove(sampleList);
        });
        Runtime.getRuntime().addShutdownHook(hook);
        shutdownHook = hook;
        int world = s.integer("world_size");
        say(ring + " ready: " + dataset.size() + " images, partition " + s.integer("rank") + " of " + world
                + (world > 1 ? " (partition tail " + s.text("partition_tail") + ")" : "")
                + ", batch " + s.integer("batch_size") + ", " + s.integer("slots") + " slots of "
                + geometry.slotStride() + " bytes (" + geometry.totalLength() + " bytes in all), "
                + (s.longValue("epochs") == 0 ? "no end" : loader.totalBatches() + " batches")
                + "; waiting for a consumer");
        try {
            return drain(loader, shm);
        } finally {
            loader.close();
            shm.close();
            SampleList.remove(sampleList); // it lives as long as the ring does
        }
    }

    /**
     * {@code --decode gpu|auto}: the GPU decode stage's batches copied into the ring by a {@link
     * DeviceBatchPublisher}, one loop every 20 ms as with the loader, until every batch is published
     * and read, or the stage fails.
     */
    private int serveFromGpu(
            Dataset dataset,
            GpuDecodeStage stage,
            boolean skipErrors,
            long firstSequence,
            ShmRing shm,
            RingGeometry geometry)
            throws InterruptedException {
        DeviceBatchPublisher publisher;
        try {
            publisher = new DeviceBatchPublisher(stage, shm.slots(), skipErrors, firstSequence, deviceSlotsOut);
        } catch (RuntimeException | Error e) {
            stage.close();
            shm.close();
            throw e;
        }
        // As the loader's path: a signal stops the publisher and the stage, closes the dataset once
        // and removes the ring's files. The publisher first: it is the stage's one consumer.
        Thread hook = new Thread(() -> {
            publisher.close();
            stage.close();
            closeOnce(dataset);
            shm.close();
            SampleList.remove(sampleList);
        });
        Runtime.getRuntime().addShutdownHook(hook);
        shutdownHook = hook;
        LoaderSettings s = setup.settings();
        say(ring + " ready: " + dataset.size() + " images, partition " + s.integer("rank") + " of "
                + s.integer("world_size") + ", batch " + s.integer("batch_size") + ", " + s.integer("slots")
                + " slots of " + geometry.slotStride() + " bytes (" + geometry.totalLength()
                + " bytes in all), decoded on the GPU; waiting for a consumer");
        try {
            long lastStatus = System.nanoTime();
            StallReport stall = new StallReport(stallReportMillis);
            RestartCacheLogFile cacheEpochs =
                    new RestartCacheLogFile(stage.restartCacheEpochs(), restartCacheLog, SAYS);
            while (true) {
                cacheEpochs.report(err);
                Throwable failure = publisher.failure();
                if (failure instanceof NoSampleDecodedException e) {
                    say(e.getMessage()); // the consumer sees the ring's failed state after what was published
                    return EXIT_FAILED;
                }
                if (failure != null) {
                    throw new IllegalStateException("the GPU decode failed: " + failure, failure);
                }
                SlotCounts counts = shm.slots().counts();
                if (publisher.finished() && counts.drained()) {
                    cacheEpochs.report(err); // the last epoch's, handed out since the look above
                    say("the consumer has read every batch (" + publisher.published() + " decoded on the GPU: "
                            + stage.stats() + "); done");
                    return EXIT_DONE;
                }
                // Waiting for the order feed's next epoch, every batch before it out: waiting on the consumer.
                if (stage.awaitingOrder()) {
                    stall.consumerOwes(System.nanoTime());
                } else if (!publisher.finished()) {
                    stall.check(
                            System.nanoTime(),
                            publisher.published(),
                            counts,
                            shm.geometry().slotCount(),
                            () -> "GPU decode stage: " + stage.bufferState() + "; " + stage.stats(),
                            this::say);
                }
                if (statusIntervalMillis > 0 && System.nanoTime() - lastStatus >= statusIntervalMillis * 1_000_000L) {
                    lastStatus = System.nanoTime();
                    say(String.format(
                            Locale.ROOT,
                            "batches produced %d (GPU decode), consumer lag %d, slots in use %d/%d (consumer holds %d,"
                                    + " ready %d, filling %d), re-delivered %d",
                            publisher.published(),
                            Math.max(0, publisher.published() + shm.redelivered() - shm.consumed()),
                            counts.inUse(),
                            shm.geometry().slotCount(),
                            counts.held(),
                            counts.ready(),
                            counts.filling(),
                            shm.redelivered()));
                }
                Thread.sleep(20);
            }
        } finally {
            publisher.close();
            stage.close(); // unregisters the ring's mapping before it is unmapped
            shm.close();
            SampleList.remove(sampleList);
        }
    }

    /** The loop: every 20 ms, until every batch is published and read, or a worker fails. */
    private int drain(Loader loader, ShmRing shm) throws InterruptedException {
        long lastStatus = System.nanoTime();
        AutoWorkersLogFile changes = loader.autoWorkers() == null
                ? null
                : new AutoWorkersLogFile(loader.autoWorkers(), autoWorkersLog, SAYS);
        RestartCacheLogFile cacheEpochs = new RestartCacheLogFile(loader, restartCacheLog, SAYS);
        StallReport stall = new StallReport(stallReportMillis);
        while (true) {
            if (changes != null) {
                changes.report(err);
            }
            cacheEpochs.report(err);
            Throwable failure = loader.failure();
            if (failure instanceof NoSampleDecodedException e) {
                // The consumer sees the ring's failed state once it has read what was published.
                say(e.getMessage());
                return EXIT_FAILED;
            }
            if (failure != null) {
                throw new IllegalStateException("a worker failed: " + failure, failure);
            }
            SlotCounts counts = shm.slots().counts();
            boolean allPublished = loader.publishedBatches() == loader.totalBatches();
            if (allPublished && counts.drained()) {
                cacheEpochs.report(err); // the last epoch's, published since the look above
                status(loader, shm, counts);
                say("the consumer has read every batch; done");
                return EXIT_DONE;
            }
            // Waiting for the order feed's next epoch, every batch before it out: waiting on the consumer.
            if (loader.awaitingOrder()) {
                stall.consumerOwes(System.nanoTime());
            } else if (!allPublished) {
                stall.check(
                        System.nanoTime(),
                        loader.publishedBatches(),
                        counts,
                        shm.geometry().slotCount(),
                        () -> null,
                        this::say);
            }
            if (statusIntervalMillis > 0 && System.nanoTime() - lastStatus >= statusIntervalMillis * 1_000_000L) {
                lastStatus = System.nanoTime();
                status(loader, shm, counts);
            }
            Thread.sleep(20);
        }
    }

    private void say(String message) {
        err.println(SAYS + message);
        err.flush();
    }

    /** The one sentence for a named ring that does not fit: the bytes, and every way out. */
    public static String doesNotFit(RingSpaceException e) {
        long mib = (e.needed() + (1L << 20) - 1) >> 20;
        // A power of two with a quarter more than the ring: room for others' use of shared memory.
        long suggest = Long.highestOneBit(Math.max(1, mib + mib / 4)) << 1;
        return String.format(
                Locale.ROOT,
                "the ring %s does not fit: it needs %,d bytes (%,d MiB) and its file system has %,d bytes free;"
                        + " make the ring smaller (a smaller --batch-size, fewer --slots, a smaller --crop, or"
                        + " --output uint8 instead of float32), give the container more shared memory (Docker:"
                        + " --shm-size=%s; Kubernetes: an emptyDir volume with medium: Memory mounted at /dev/shm),"
                        + " or put the ring in a directory with room (--ring DIR/NAME)",
                e.ring(),
                e.needed(),
                mib,
                e.free(),
                suggest >= 1024 ? (suggest >> 10) + "g" : suggest + "m");
    }

    private void status(Loader loader, ShmRing shm, SlotCounts counts) {
        long published = loader.publishedBatches();
        long consumer = shm.consumerPid();
        err.printf(
                SAYS + "batches produced %d%s, workers %d, consumer lag %d, slots in use %d/%d (consumer holds %d,"
                        + " ready %d, filling %d%s), consumer %s, re-delivered %d%n",
                published,
                loader.totalBatches() == Long.MAX_VALUE ? "" : "/" + loader.totalBatches(),
                loader.activeWorkers(),
                Math.max(0, published + shm.redelivered() - shm.consumed()),
                counts.inUse(),
                shm.geometry().slotCount(),
                counts.held(),
                counts.ready(),
                counts.filling(),
                counts.unknown() > 0 ? ", " + counts.unknown() + " in an unknown state" : "",
                consumer > 0 ? "pid " + consumer : "none",
                shm.redelivered());
        err.flush();
    }
}
