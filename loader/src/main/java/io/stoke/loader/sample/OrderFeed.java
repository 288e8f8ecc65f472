package io.stoke.loader.sample;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.BooleanSupplier;
import org.agrona.concurrent.IdleStrategy;

/**
 * Epoch orders given from outside, the third kind of order beside {@link Sampler}'s shuffled and
 * sequential ones: a Python sampler or batch sampler draws each epoch, and its consumer writes the
 * order here before that epoch's first batch. The producer takes each epoch exactly as given and
 * never runs ahead into an epoch whose order has not come: a worker that needs it waits.
 *
 * <p>The feed is a stream (a pipe, {@code stoke serve --order-feed /dev/fd/N}) of records, one per
 * epoch, consecutive from the start epoch, each little-endian int64s: {@code epoch}, {@code
 * batches}, {@code samples}, then {@code batches} batch sizes (each 1 to the batch size, summing to
 * {@code samples}), then {@code samples} dataset indices (each in {@code [0, N)}). docs/shared-memory.md
 * ("The order feed") specifies it once. One daemon thread reads it ahead, so a writer never waits on
 * the workers; a record that breaks these rules stops the producer with a message naming the epoch,
 * the position and the value.
 */
public final class OrderFeed implements AutoCloseable {
    private static final int KEEP = 4;

    private final String source;
    private final int datasetSize;
    private final int batchSize;
    private final InputStream in;
    private final Thread reader;
    private final GivenEpoch[] kept = new GivenEpoch[KEEP];
    private volatile long fedThrough = Long.MIN_VALUE; // the last epoch read whole
    private volatile long asked = Long.MIN_VALUE; // the latest epoch a reader asked for (await)
    private volatile RuntimeException failure;
    private volatile boolean ended;
    private long expected = -1;
    // The epoch a resumed run must be given again as it was saved (null: none to check).
    private final GivenEpoch resumed;

    /**
     * One epoch's order as given: its dataset indices in delivery order and where each batch starts.
     *
     * @param epoch       the epoch
     * @param indices     dataset indices, in order
     * @param batchStarts {@code batches + 1} positions: batch {@code k} is {@code [batchStarts[k], batchStarts[k+1])}
     */
    public record GivenEpoch(long epoch, int[] indices, int[] batchStarts) {
        /** Batches in the epoch. */
        public int batches() {
            return batchStarts.length - 1;
        }

        /**
         * Refuses to start this epoch at {@code startBatch} where it is outside its batches (its
         * end is a start only in an epoch of none).
         *
         * @throws IllegalStateException naming the start batch, the epoch and its batches
         */
        public void checkStartBatch(int startBatch) {
            int batches = batches();
            if (startBatch > batches || (startBatch == batches && startBatch > 0)) {
                throw new IllegalStateException("start batch " + startBatch + " is outside epoch " + epoch + "'s "
                        + batches + " batches in the order fed");
            }
        }

        /** The batch that position {@code position} falls in. */
        public int batchOf(int position) {
            int low = 0;
            int high = batchStarts.length - 2;
            while (low < high) {
                int mid = (low + high + 1) >>> 1;
                if (batchStarts[mid] <= position) {
                    low = mid;
                } else {
                    high = mid - 1;
                }
            }
            return low;
        }
    }

    /**
     * Opens the feed at {@code path} and starts reading it.
     *
     * @param path        the feed (a pipe, or a file that holds whole records)
     * @param datasetSize the dataset's samples: every index must be below it
     * @param batchSize   the most samples a batch may hold (a ring slot's)
     */
    public static OrderFeed open(Path path, int datasetSize, int batchSize) {
        return open(path, datasetSize, batchSize, null);
    }

    /**
     * {@link #open(Path, int, int)} for a resumed run: {@code resumed}'s epoch, when the feed gives
     * it, must be exactly that order (batch sizes and indices), the one a saved state's batches were
     * counted in; another stops the producer naming the first difference.
     *
     * @param resumed the saved epoch's order (a {@code LoaderState}'s given order), or null
     */
    public static OrderFeed open(Path path, int datasetSize, int batchSize, GivenEpoch resumed) {
        try {
            return new OrderFeed(Files.newInputStream(path), "order feed " + path, datasetSize, batchSize, resumed);
        } catch (IOException e) {
            throw new IllegalArgumentException("--order-feed " + path + ": cannot open it (" + e.getMessage() + ")");
        }
    }

    /** A feed read from {@code in}, named {@code source} in its errors. */
    public OrderFeed(InputStream in, String source, int datasetSize, int batchSize) {
        this(in, source, datasetSize, batchSize, null);
    }

    /** A feed read from {@code in} that must give {@code resumed}'s epoch as it is (see {@link #open(Path, int, int, GivenEpoch)}). */
    public OrderFeed(InputStream in, String source, int datasetSize, int batchSize, GivenEpoch resumed) {
        this.in = in;
        this.resumed = resumed;
        this.source = source;
        this.datasetSize = datasetSize;
        this.batchSize = batchSize;
        this.reader = Thread.ofPlatform().name("stoke-order-feed").daemon(true).unstarted(this::read);
        reader.start();
    }

    /**
     * Epoch {@code epoch}'s order, waiting for it while {@code running} says so.
     *
     * @return the order, or null when {@code running} turned false first
     * @throws IllegalStateException the feed broke its format, ended before this epoch, or skipped it
     */
    public GivenEpoch await(long epoch, BooleanSupplier running, IdleStrategy idle) {
        if (epoch > asked) {
            asked = epoch; // readers ask in increasing epochs; a lost race only delays awaited()
        }
        idle.reset();
        while (true) {
            if (fedThrough >= epoch) {
                synchronized (kept) {
                    for (GivenEpoch e : kept) {
                        if (e != null && e.epoch == epoch) {
                            return e;
                        }
                    }
                }
                throw new IllegalStateException(source + ": epoch " + epoch + "'s order was needed after the " + KEEP
                        + " epochs the feed keeps had moved past it");
            }
            RuntimeException failed = failure;
            if (failed != null) {
                throw failed;
            }
            if (ended) {
                throw new IllegalStateException(
                        source + " ended before epoch " + epoch + "'s order came (the consumer closed it)");
            }
            if (!running.getAsBoolean()) {
                return null;
            }
            idle.idle();
        }
    }

    /**
     * Whether a reader has asked for an epoch's order ({@link #await}) that the feed has not given
     * yet: the producer waits on its consumer, which gives an epoch's order when it starts reading
     * that epoch, so a wait for a batch meanwhile is the consumer's own (a stall report says nothing).
     */
    public boolean awaited() {
        return asked > fedThrough && failure == null && !ended;
    }

    /**
     * Epoch {@code epoch}'s order if the feed has given it and still keeps it (the last {@value
     * #KEEP} read), else null; never waits.
     */
    public GivenEpoch given(long epoch) {
        if (fedThrough < epoch) {
            return null;
        }
        synchronized (kept) {
            for (GivenEpoch e : kept) {
                if (e != null && e.epoch == epoch) {
                    return e;
                }
            }
        }
        return null;
    }

    private void read() {
        try (DataInputStream data = new DataInputStream(new BufferedInputStream(in, 1 << 16))) {
            while (true) {
                long epoch;
                try {
                    epoch = Long.reverseBytes(data.readLong());
                } catch (EOFException e) {
                    ended = true;
                    return;
                }
                GivenEpoch given = record(epoch, data);
                synchronized (kept) {
                    kept[(int) Math.floorMod(epoch, (long) KEEP)] = given;
                }
                fedThrough = epoch;
            }
        } catch (IOException e) {
            failure = new IllegalStateException(source + ": cannot read it (" + e.getMessage() + ")");
        } catch (RuntimeException e) {
            failure = e;
        }
    }

    private GivenEpoch record(long epoch, DataInputStream data) throws IOException {
        if (expected >= 0 && epoch != expected) {
            throw fail(epoch, "came where epoch " + expected + " was due: epochs are fed in order, one record each");
        }
        expected = epoch + 1;
        long batches = Long.reverseBytes(data.readLong());
        long samples = Long.reverseBytes(data.readLong());
        if (batches < 0 || samples < 0 || samples > Integer.MAX_VALUE || batches > samples) {
            throw fail(epoch, "says " + batches + " batches of " + samples + " samples");
        }
        int[] starts = new int[(int) batches + 1];
        for (int k = 0; k < batches; k++) {
            long size = Long.reverseBytes(data.readLong());
            if (size < 1 || size > batchSize) {
                throw fail(epoch, "batch " + k + " holds " + size + " samples; a batch holds 1 to " + batchSize);
            }
            starts[k + 1] = (int) Math.min(Integer.MAX_VALUE, starts[k] + size);
        }
        if (starts[(int) batches] != samples) {
            throw fail(epoch, "has batches of " + starts[(int) batches] + " samples in all, and says " + samples);
        }
        int[] indices = new int[(int) samples];
        for (int i = 0; i < samples; i++) {
            long index = Long.reverseBytes(data.readLong());
            if (index < 0 || index >= datasetSize) {
                throw fail(
                        epoch,
                        "position " + i + " is index " + index + ", outside the dataset's " + datasetSize + " samples");
            }
            indices[i] = (int) index;
        }
        GivenEpoch given = new GivenEpoch(epoch, indices, starts);
        if (resumed != null && resumed.epoch() == epoch) {
            sameAsSaved(given);
        }
        return given;
    }

    private void sameAsSaved(GivenEpoch given) {
        String why = null;
        if (!java.util.Arrays.equals(given.batchStarts(), resumed.batchStarts())) {
            why = "has " + given.batches() + " batches of " + given.indices().length + " samples, the saved "
                    + resumed.batches() + " of " + resumed.indices().length;
            for (int k = 1; k < Math.min(given.batchStarts().length, resumed.batchStarts().length); k++) {
                if (given.batchStarts()[k] != resumed.batchStarts()[k]) {
                    why = "batch " + (k - 1) + " holds " + (given.batchStarts()[k] - given.batchStarts()[k - 1])
                            + " samples, the saved " + (resumed.batchStarts()[k] - resumed.batchStarts()[k - 1]);
                    break;
                }
            }
        } else {
            int i = java.util.Arrays.mismatch(given.indices(), resumed.indices());
            if (i >= 0) {
                why = "position " + i + " is index " + given.indices()[i] + ", the saved " + resumed.indices()[i];
            }
        }
        if (why != null) {
            throw fail(
                    given.epoch(),
                    "is not the one the resumed state was saved in: " + why
                            + " (feed the epoch's saved order again, the state's given order)");
        }
    }

    private IllegalStateException fail(long epoch, String what) {
        return new IllegalStateException(source + ": epoch " + epoch + "'s order " + what);
    }

    /** Stops reading: closes the stream (a pipe's reader then sees its end). */
    @Override
    public void close() {
        try {
            in.close();
        } catch (IOException ignored) {
            // closing only
        }
    }
}
