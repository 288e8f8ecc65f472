package io.stoke.cli;

import io.stoke.loader.Loader;
import io.stoke.loader.NoSampleDecodedException;
import io.stoke.loader.source.SampleIndex;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.ShmRing;
import io.stoke.ring.SlotCounts;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code stoke serve DATA --ring /dev/shm/NAME}: decodes a dataset into a shared-memory ring that a
 * consumer in another process reads (Java {@code RingConsumer}, Python {@code stoke_client}, or C
 * against {@code native/stoke_ring.h}), until the consumer has read every batch of the requested
 * epochs. The ring file is removed on a clean exit; a crash leaves a file that the next
 * {@code serve} on the same path replaces.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {"Decode DATA into a shared-memory ring for a consumer in another process. DATA is an ImageFolder",
                "tree (DATA/<class>/<image>.jpg) or a list file with one '<path> <label>' per line. Takes the same",
                "loader options as 'stoke bench'."})
public final class ServeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DATA", description = "ImageFolder directory or list file.")
    Path dataset;

    @Option(names = "--ring", required = true, paramLabel = "PATH", description = "The ring file, e.g. /dev/shm/train.")
    Path ring;

    @Mixin
    LoaderOptions options;

    @Option(names = "--status-interval", defaultValue = "1000", paramLabel = "MS",
            description = "Milliseconds between status lines on stderr, 0 = none (default: ${DEFAULT-VALUE}).")
    long statusInterval;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        SampleIndex index = LoaderOptions.index(dataset);
        Loader.Builder builder = options.builder(index); // checks every option before the ring exists
        RingGeometry geometry = Loader.geometryOf(options.batchSize, options.slots, options.transform());
        ShmRing shm = ShmRing.create(ring, geometry, msg -> {
            err.println("stoke serve: " + msg);
            err.flush();
        });
        Loader loader;
        try {
            loader = builder.ring(g -> shm.slots()).build();
        } catch (RuntimeException | Error e) {
            shm.close();
            throw e;
        }
        // Ctrl-C / SIGTERM: stop the workers and remove the file like a clean exit.
        Thread hook = new Thread(() -> {
            loader.close();
            shm.close();
        });
        Runtime.getRuntime().addShutdownHook(hook);
        err.println("stoke serve: " + ring + " ready: " + index.size() + " images, shard " + options.rank + " of "
                + options.worldSize + ", batch " + options.batchSize + ", " + options.slots + " slots of "
                + geometry.slotStride() + " bytes, " + (options.epochs == 0 ? "no end" : loader.totalBatches() + " batches")
                + "; waiting for a consumer");
        err.flush();
        try {
            long lastStatus = System.nanoTime();
            while (true) {
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
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // already shutting down: the hook is running or ran
            }
        }
    }

    private static void status(PrintWriter err, Loader loader, ShmRing shm, SlotCounts counts) {
        long published = loader.publishedBatches();
        long consumer = shm.consumerPid();
        err.printf("stoke serve: batches produced %d%s, consumer lag %d, slots in use %d/%d (consumer holds %d, ready %d, filling %d%s),"
                        + " consumer %s, re-delivered %d%n",
                published, loader.totalBatches() == Long.MAX_VALUE ? "" : "/" + loader.totalBatches(),
                Math.max(0, published + shm.redelivered() - shm.consumed()), counts.inUse(), shm.geometry().slotCount(),
                counts.held(), counts.ready(), counts.filling(),
                counts.unknown() > 0 ? ", " + counts.unknown() + " in an unknown state" : "",
                consumer > 0 ? "pid " + consumer : "none", shm.redelivered());
        err.flush();
    }
}
