package io.stoke.cli;

import static io.stoke.ring.RingLayout.SLOT_STATE_FILLING;
import static io.stoke.ring.RingLayout.SLOT_STATE_HELD;
import static io.stoke.ring.RingLayout.SLOT_STATE_READY;

import io.stoke.loader.ErrorPolicy;
import io.stoke.loader.Loader;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.ShmRing;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code stoke serve DIR --ring /dev/shm/NAME}: decodes a dataset into a shared-memory ring that a
 * consumer in another process reads (Java {@code RingConsumer}, Python {@code stoke_client}, or C
 * against {@code native/stoke_ring.h}), until the consumer has read every batch of the requested
 * epochs. The ring file is removed on a clean exit; a crash leaves a file that the next
 * {@code serve} on the same path replaces.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Decode DIR (ImageFolder layout) into a shared-memory ring for a consumer in another process.")
public final class ServeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DIR", description = "dataset root: DIR/<class>/<image>.jpg")
    Path dir;

    @Option(names = "--ring", required = true, paramLabel = "PATH", description = "the ring file, e.g. /dev/shm/train")
    Path ring;

    @Option(names = "--batch-size", defaultValue = "256", description = "samples per batch (default ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--workers", description = "decoding threads (default: the number of cores)")
    Integer workers;

    @Option(names = "--epochs", defaultValue = "1", description = "epochs to serve, 0 = until stopped (default ${DEFAULT-VALUE})")
    long epochs;

    @Option(names = "--slots", defaultValue = "4", description = "batches in the ring (default ${DEFAULT-VALUE})")
    int slots;

    @Option(names = "--shuffle", description = "shuffle each epoch")
    boolean shuffle;

    @Option(names = "--seed", defaultValue = "0", description = "shuffle seed (default ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--resize", defaultValue = "256", description = "resize the shorter side to this (default ${DEFAULT-VALUE})")
    int resize;

    @Option(names = "--crop", defaultValue = "224", description = "center crop size (default ${DEFAULT-VALUE})")
    int crop;

    @Option(names = "--output", defaultValue = "uint8", description = "uint8 (HWC) or float32 (normalised CHW) (default ${DEFAULT-VALUE})")
    String output;

    @Option(names = "--on-error", defaultValue = "skip", description = "skip (zeroed sample, status code) or fail (default ${DEFAULT-VALUE})")
    String onError;

    @Option(names = "--status-interval", defaultValue = "1000", paramLabel = "MS",
            description = "milliseconds between status lines on stderr, 0 = none (default ${DEFAULT-VALUE})")
    long statusInterval;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        TransformSpec transform = TransformSpec.defaults().withResize(resize, crop).withOutput(switch (output) {
            case "uint8" -> TransformSpec.Output.UINT8_HWC;
            case "float32" -> TransformSpec.Output.FLOAT32_CHW;
            default -> throw new IllegalArgumentException("--output must be uint8 or float32: " + output);
        });
        ErrorPolicy policy = switch (onError) {
            case "skip" -> ErrorPolicy.SKIP;
            case "fail" -> ErrorPolicy.FAIL;
            default -> throw new IllegalArgumentException("--on-error must be skip or fail: " + onError);
        };
        RingGeometry geometry = Loader.geometryOf(batchSize, slots, transform);
        ShmRing shm = ShmRing.create(ring, geometry, msg -> {
            err.println("stoke serve: " + msg);
            err.flush();
        });
        Loader loader;
        try {
            Loader.Builder b = Loader.imageFolder(dir).batchSize(batchSize).slots(slots).shuffle(shuffle).seed(seed)
                    .epochs(epochs).transform(transform).onError(policy).ring(g -> shm.slots());
            if (workers != null) {
                b.workers(workers);
            }
            loader = b.build();
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
        err.println("stoke serve: " + ring + " ready: " + loader.index().size() + " images, batch " + batchSize
                + ", " + slots + " slots of " + geometry.slotStride() + " bytes, "
                + (epochs == 0 ? "no end" : loader.totalBatches() + " batches") + "; waiting for a consumer");
        err.flush();
        try {
            long lastStatus = System.nanoTime();
            while (true) {
                Throwable failure = loader.failure();
                if (failure != null) {
                    throw new IllegalStateException("a worker failed: " + failure, failure);
                }
                int[] states = shm.slots().stateCounts();
                boolean allPublished = loader.publishedBatches() == loader.totalBatches();
                if (allPublished && states[SLOT_STATE_READY] == 0 && states[SLOT_STATE_HELD] == 0) {
                    status(err, loader, shm, states);
                    err.println("stoke serve: the consumer has read every batch; done");
                    return 0;
                }
                if (statusInterval > 0 && System.nanoTime() - lastStatus >= statusInterval * 1_000_000L) {
                    lastStatus = System.nanoTime();
                    status(err, loader, shm, states);
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

    private static void status(PrintWriter err, Loader loader, ShmRing shm, int[] states) {
        long published = loader.publishedBatches();
        long consumer = shm.consumerPid();
        err.printf("stoke serve: batches produced %d%s, consumer lag %d, slots in use %d/%d (consumer holds %d, ready %d, filling %d),"
                        + " consumer %s, re-delivered %d%n",
                published, loader.totalBatches() == Long.MAX_VALUE ? "" : "/" + loader.totalBatches(),
                Math.max(0, published + shm.redelivered() - shm.consumed()),
                states[SLOT_STATE_HELD] + states[SLOT_STATE_READY] + states[SLOT_STATE_FILLING], shm.geometry().slotCount(),
                states[SLOT_STATE_HELD], states[SLOT_STATE_READY], states[SLOT_STATE_FILLING],
                consumer > 0 ? "pid " + consumer : "none", shm.redelivered());
        err.flush();
    }
}
