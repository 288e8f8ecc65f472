package io.stoke.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.io.SerializedString;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.Loader;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.fs.SafeFiles;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ShardDataset;
import io.stoke.ring.InheritedDescriptor;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingSpaceException;
import io.stoke.ring.ShmRing;
import io.stoke.ring.SlotCounts;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code stoke serve DATA --ring /dev/shm/NAME}: decodes a dataset into a shared-memory ring that a
 * consumer in another process reads (Java {@code RingConsumer}, Python {@code stoke}, or C
 * against {@code native/stoke_ring.h}), until the consumer has read every batch of the requested
 * epochs. The ring file is removed on a clean exit; a crash leaves a file that the next
 * {@code serve} on the same path replaces.
 */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = {
            "Decode DATA into a shared-memory ring for a consumer in another process. DATA is an ImageFolder",
            "tree (DATA/<class>/<image>.jpg) or a list file with one '<path> <label>' per line. Takes the same",
            "loader options as 'stoke bench'."
        })
public final class ServeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(
            index = "0",
            paramLabel = "DATA",
            description = {
                "The dataset: an ImageFolder directory, a list file, a WebDataset .tar shard, a brace pattern",
                "of shards (train-{000000..000127}.tar), or a folder of .tar shards."
            })
    String data;

    @Option(
            names = "--ring",
            required = true,
            paramLabel = "PATH",
            description = {
                "The ring file, e.g. /dev/shm/train: its pages are reserved when it is created, and a ring",
                "that does not fit fails at once saying how many bytes it needs and how many are free. Or",
                "/dev/fd/N: an empty file this process inherited as descriptor N (an anonymous memfd, which no",
                "/dev/shm size limits), laid out in place and left to its owner (how stoke.DataLoader runs)."
            })
    Path ring;

    @Mixin
    LoaderOptions options;

    @Option(
            names = "--status-interval",
            defaultValue = "1000",
            paramLabel = "MS",
            description = "Milliseconds between status lines on stderr, 0 = none (default: ${DEFAULT-VALUE}).")
    long statusInterval;

    @Option(
            names = "--parent-pid",
            paramLabel = "PID",
            description = {
                "Stop, and remove the ring file, within 100 ms of process PID exiting, however it ends",
                "(kill -9 included), from the start on (while a remote dataset opens too): how",
                "stoke.DataLoader ties its producer to the Python process."
            })
    Long parentPid;

    @Option(
            names = "--index-out",
            paramLabel = "FILE",
            description = {
                "Before the ring is ready, write the dataset index to FILE: one JSON array [path, label]",
                "per line and sample, in dataset order (a batch's indices are line numbers from 0), written atomically",
                "and removed with the ring. /dev/fd/N (an inherited descriptor) is written in place and kept."
            })
    Path indexOut;

    @Option(
            names = "--tuning-out",
            paramLabel = "FILE",
            description = {
                "With --workers auto, append each change of the active workers to FILE as it is made: one JSON",
                "object per line {\"at_s\", \"from_workers\", \"to_workers\", \"reason\"} (the Python package reads it)."
            })
    Path tuningOut;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        // The parent is watched before anything else runs: a remote dataset's open alone can fetch
        // for minutes, and an orphan must stop within 100 ms wherever it is.
        ParentWatch watch = null;
        if (parentPid != null && (watch = ParentWatch.start(parentPid, "stoke serve", err)) == null) {
            return Main.EXIT_FAILED;
        }
        try {
            Dataset dataset = options.open(data);
            try {
                return serve(err, dataset);
            } finally {
                closeOnce(dataset);
            }
        } finally {
            if (watch != null) {
                watch.close();
            }
        }
    }

    private final AtomicBoolean datasetClosed = new AtomicBoolean();

    /** Closes the dataset the first time only: a mapped shard's arena refuses a second close. */
    private void closeOnce(Dataset dataset) {
        if (datasetClosed.compareAndSet(false, true)) {
            dataset.close();
        }
    }

    private int serve(PrintWriter err, Dataset dataset) throws Exception {
        // A missing libturbojpeg0 is one sentence naming the package, before the ring exists; found
        // first by a worker, it was "a worker failed: java.lang.ExceptionInInitializerError".
        TurboJpeg.ensureLoaded();
        Loader.Builder builder = options.builder(dataset); // checks every option before the ring exists
        if (indexOut != null) {
            writeIndex(dataset, builder.sampler().shardWindow(), indexOut);
        }
        RingGeometry geometry = Loader.geometryOf(options.batchSize, options.slots, options.transform());
        ShmRing shm;
        try {
            shm = ShmRing.create(ring, geometry, msg -> {
                err.println("stoke serve: " + msg);
                err.flush();
            });
        } catch (RingSpaceException e) {
            err.println("stoke serve: " + doesNotFit(e));
            err.flush();
            removeIndex();
            return Main.EXIT_FAILED;
        }
        Loader loader;
        try {
            loader = builder.ring(g -> shm.slots()).build();
        } catch (RuntimeException | Error e) {
            shm.close();
            throw e;
        }
        if (loader.resumed() != null) {
            err.println("stoke serve: " + loader.resumed().report());
        }
        // Ctrl-C / SIGTERM (stoke.DataLoader's close): stop the workers and remove the files like a
        // clean exit. The dataset is closed too, once no worker reads it: a shared shard cache's files
        // are removed by the last process that maps them, and a process that never closes its dataset
        // would leave them all behind. Once: the hook and call's finally may both come here.
        Thread hook = new Thread(() -> {
            loader.close();
            closeOnce(dataset);
            shm.close();
            removeIndex();
        });
        Runtime.getRuntime().addShutdownHook(hook);
        err.println("stoke serve: " + ring + " ready: " + dataset.size() + " images, shard " + options.rank + " of "
                + options.worldSize + (options.worldSize > 1 ? " (shard tail " + options.shardTail + ")" : "")
                + ", batch " + options.batchSize + ", " + options.slots + " slots of "
                + geometry.slotStride() + " bytes (" + geometry.totalLength() + " bytes in all), "
                + (options.epochs == 0 ? "no end" : loader.totalBatches() + " batches")
                + "; waiting for a consumer");
        err.flush();
        try {
            long lastStatus = System.nanoTime();
            TuningReport tuning =
                    loader.autoWorkers() == null ? null : new TuningReport(loader.autoWorkers(), tuningOut);
            while (true) {
                if (tuning != null) {
                    tuning.report(err);
                }
                Throwable failure = loader.failure();
                if (failure instanceof NoSampleDecodedException e) {
                    // The consumer sees the ring's failed state once it has read what was published.
                    err.println("stoke serve: " + e.getMessage());
                    err.flush();
                    return Main.EXIT_FAILED;
                }
                if (failure != null) {
                    throw new IllegalStateException("a worker failed: " + failure, failure);
                }
                SlotCounts counts = shm.slots().counts();
                boolean allPublished = loader.publishedBatches() == loader.totalBatches();
                if (allPublished && counts.drained()) {
                    status(err, loader, shm, counts);
                    err.println("stoke serve: the consumer has read every batch; done");
                    return 0;
                }
                if (statusInterval > 0 && System.nanoTime() - lastStatus >= statusInterval * 1_000_000L) {
                    lastStatus = System.nanoTime();
                    status(err, loader, shm, counts);
                }
                Thread.sleep(20);
            }
        } finally {
            loader.close();
            shm.close();
            removeIndex(); // it lives as long as the ring does
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // already shutting down: the hook is running or ran
            }
        }
    }

    /**
     * A first line {@code {"samples": N, "listed": true|false}}, then, when listed, one JSON array
     * {@code ["<name>", <label>]} per line and sample, the name being the file's path or
     * {@code <shard>/<key>} (JSON so that any file name survives), written with Jackson to an
     * exclusive temporary file ({@code O_EXCL}, under a random name) that is then renamed into place,
     * {@code 0600}: a link planted at the name, or at any name the temporary file could take, is
     * replaced or refused, never followed. Remote shards opened from their index are not
     * listed: their names and labels are read from each shard when it is fetched, and listing them
     * here would fetch every shard before the first batch (local ones are: their headers are read
     * where they are mapped).
     */
    private static void writeIndex(Dataset dataset, int shuffleWindow, Path file) throws IOException {
        // An inherited descriptor is written in place: the reader reads it once the ring is ready.
        if (InheritedDescriptor.names(file)) {
            try (java.io.OutputStream out = Files.newOutputStream(file)) {
                writeIndex(dataset, shuffleWindow, out);
            }
        } else {
            SafeFiles.writeStreamAtomically(file, FolderAccess.PRIVATE, out -> writeIndex(dataset, shuffleWindow, out));
        }
    }

    private static void writeIndex(Dataset dataset, int shuffleWindow, java.io.OutputStream out) throws IOException {
        JsonFactory json = new JsonFactory();
        try (JsonGenerator g = json.createGenerator(out, com.fasterxml.jackson.core.JsonEncoding.UTF8)) {
            g.setRootValueSeparator(new SerializedString("\n"));
            boolean listed = !(dataset instanceof ShardDataset sharded
                    && sharded.shards().indexed()
                    && sharded.shards().cached());
            g.writeStartObject();
            g.writeNumberField("samples", dataset.size());
            g.writeBooleanField("listed", listed);
            g.writeStringField("dataset", dataset.fingerprint());
            g.writeNumberField("shuffle_window", shuffleWindow); // the one in effect: 0 is global
            g.writeEndObject();
            for (int i = 0; listed && i < dataset.size(); i++) {
                g.writeStartArray();
                g.writeString(dataset.name(i));
                g.writeNumber(dataset.label(i));
                g.writeEndArray();
            }
            g.writeRaw('\n');
        }
    }

    /** Removes the --index-out file, a named one: an inherited descriptor is its owner's. */
    private void removeIndex() {
        if (indexOut != null && !InheritedDescriptor.names(indexOut)) {
            indexOut.toFile().delete(); // best effort, in a shutdown hook too
        }
    }

    /** The one sentence for a named ring that does not fit: the bytes, and every way out. */
    static String doesNotFit(RingSpaceException e) {
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

    private static void status(PrintWriter err, Loader loader, ShmRing shm, SlotCounts counts) {
        long published = loader.publishedBatches();
        long consumer = shm.consumerPid();
        err.printf(
                "stoke serve: batches produced %d%s, workers %d, consumer lag %d, slots in use %d/%d (consumer holds %d, ready %d, filling %d%s),"
                        + " consumer %s, re-delivered %d%n",
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
