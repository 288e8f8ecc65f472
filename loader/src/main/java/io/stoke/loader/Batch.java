package io.stoke.loader;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.error.SampleStatus;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.SlotBody;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * One batch, read in place in its ring slot. Closing it returns the slot to the workers.
 *
 * <p>Every segment this batch hands out ({@link #pixels()}, {@link #labels()}, {@link #indices()})
 * belongs to the batch's own arena: after {@link #close()} any access to them throws
 * {@link IllegalStateException}, so stale references can never read a slot that the workers are
 * refilling, nor memory that was freed. Not thread-safe: share a batch only with proper hand-off.
 *
 * <pre>{@code
 * try (Batch b = loader.next()) {
 *     MemorySegment pixels = b.pixels();   // uint8 [n, 224, 224, 3] or float32 [n, 3, 224, 224]
 *     int label = b.label(0);
 * }
 * }</pre>
 */
public final class Batch implements BatchView {
    private final RingGeometry geometry;
    private final SlotLease lease;
    private final SlotBody body;
    private final MemorySegment pixels;
    private final MemorySegment labels;
    private final MemorySegment indices;
    private final MemorySegment status;
    private final int size;
    private final long sequence;
    private final long epoch;
    private final long batchIndex;
    private final boolean failed;
    private final boolean lastInEpoch;
    private final List<SampleError> errors;
    private final BatchStats stats;
    private int padded = -1;

    /**
     * A batch over slot {@code slot} of a ring the caller produces into itself (a decoder of its own
     * feeding the GPU stage, say). The slot's header and samples must be written before the call; the
     * sample errors are read from the slot's status codes. {@code release} is given the slot number
     * once, on {@link #close()}; it is usually {@code ring::release}, after which the slot may be
     * filled again.
     *
     * @throws IllegalStateException when the slot's header claims more samples than a slot holds
     */
    public static Batch ofSlot(SlotRing ring, int slot, IntConsumer release) {
        return new Batch(ring.geometry(), slot, ring.slot(slot), null, 0, release);
    }

    /**
     * Wraps slot {@code slot}, whose memory is {@code slotMemory}; {@code releaser} gets the slot
     * back on {@link #close()}. Loaders and ring consumers of this package only.
     *
     * @param errors the batch's failed samples with paths, or null to derive them from status codes
     */
    Batch(
            RingGeometry geometry,
            int slot,
            MemorySegment slotMemory,
            List<SampleError> errors,
            long waitNanos,
            IntConsumer releaser) {
        this.geometry = geometry;
        this.lease = new SlotLease(slot, releaser);
        MemorySegment view = lease.view(slotMemory);
        // Read once: the header was handed over with the slot (the ready queue's acquire).
        SlotHeader header = new SlotHeader().wrap(view);
        int count = header.sampleCount();
        if (count < 0 || count > geometry.samplesPerSlot()) {
            lease.abandon();
            throw new IllegalStateException(
                    "slot " + slot + " claims " + count + " samples, capacity " + geometry.samplesPerSlot());
        }
        this.size = count;
        this.sequence = header.sequence();
        this.epoch = header.epoch();
        this.batchIndex = header.batchIndex();
        this.failed = header.failed();
        this.lastInEpoch = header.lastInEpoch();
        this.body = new SlotBody(geometry).wrap(view);
        this.pixels = body.pixels(count);
        this.labels = body.labels(count);
        this.indices = body.indices(count);
        this.status = body.statuses(count);
        this.errors = errors != null ? errors : errorsFromStatus();
        this.stats = new BatchStats(waitNanos, header.decodeNanos(), header.sourceBytes(), pixels.byteSize());
    }

    private List<SampleError> errorsFromStatus() {
        List<SampleError> found = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            int code = status.getAtIndex(JAVA_INT, i);
            if (code != SampleStatus.OK.code()) {
                found.add(
                        new SampleError(i, (int) indices.getAtIndex(JAVA_LONG, i), null, SampleStatus.of(code), null));
            }
        }
        return List.copyOf(found);
    }

    /** Number of samples (the batch size, or fewer for an epoch's last batch). */
    public int size() {
        checkOpen();
        return size;
    }

    /**
     * The pixels, {@code size()} samples end to end, laid out as {@link #shape()} says: uint8
     * {@code [n, H, W, 3]} or float32 {@code [n, 3, H, W]}, native byte order.
     */
    public MemorySegment pixels() {
        checkOpen();
        return pixels;
    }

    /** One sample's pixels. */
    public MemorySegment sample(int i) {
        checkOpen();
        return pixels.asSlice(body.pixelOffset(i), geometry.sampleBytes());
    }

    /** Labels as int32 {@code [n]}. */
    public MemorySegment labels() {
        checkOpen();
        return labels;
    }

    public int label(int i) {
        checkOpen();
        return labels.getAtIndex(JAVA_INT, i);
    }

    /** Dataset indices as int64 {@code [n]}: which sample sits at each position. */
    public MemorySegment indices() {
        checkOpen();
        return indices;
    }

    public long index(int i) {
        checkOpen();
        return indices.getAtIndex(JAVA_LONG, i);
    }

    public SampleStatus status(int i) {
        checkOpen();
        return SampleStatus.of(status.getAtIndex(JAVA_INT, i));
    }

    /** {@code [n, H, W, 3]} for uint8 output, {@code [n, 3, H, W]} for float32. */
    public long[] shape() {
        checkOpen();
        return new long[] {size, geometry.d0(), geometry.d1(), geometry.d2()};
    }

    /** {@link io.stoke.ring.RingLayout#DTYPE_UINT8} or {@link io.stoke.ring.RingLayout#DTYPE_FLOAT32}. */
    public int dtype() {
        return geometry.dtype();
    }

    /** Samples that produced no pixels (zeroed) and why. Empty for a clean batch. */
    public List<SampleError> skipped() {
        checkOpen();
        return errors;
    }

    /** Whether the batch was marked failed (policy FAIL); the loader throws before handing one out. */
    public boolean failed() {
        return failed;
    }

    public boolean lastInEpoch() {
        return lastInEpoch;
    }

    public long epoch() {
        return epoch;
    }

    /** Batch number within its epoch. */
    public long batchIndex() {
        return batchIndex;
    }

    /** Set by the loader that made this batch: how many of its last samples are padding. */
    void padded(int count) {
        this.padded = count;
    }

    /**
     * How many samples of this batch are padding (always its last ones): samples repeated so that
     * every rank gets as many (partition tail PAD, see {@link io.stoke.loader.sample.Sampler#isPadding}),
     * which another rank also gets this epoch. Leave them out to count each sample once.
     *
     * @throws UnsupportedOperationException for a batch read from a ring by a {@link RingConsumer},
     *     which does not know the producer's sampler: ask {@code Sampler.paddedIn(batchIndex)} of the
     *     producer's settings
     */
    public int paddedCount() {
        if (padded < 0) {
            throw new UnsupportedOperationException("a ring consumer's batch does not know the producer's sampler: "
                    + "use Sampler.paddedIn(batchIndex()) with the producer's settings");
        }
        return padded;
    }

    /** Whether sample {@code i} is padding (see {@link #paddedCount()}). */
    public boolean isPadding(int i) {
        return i >= size - paddedCount();
    }

    /** Batch number since the loader started. */
    public long sequence() {
        return sequence;
    }

    public BatchStats stats() {
        return stats;
    }

    /** The ring slot this batch occupies. */
    public int slot() {
        return lease.slot();
    }

    public boolean isClosed() {
        return lease.isClosed();
    }

    private void checkOpen() {
        if (lease.isClosed()) {
            throw new IllegalStateException("batch " + sequence + " is closed");
        }
    }

    /**
     * For loaders and consumers before they hand a batch out: a batch marked failed (policy FAIL)
     * is closed, returning its slot, and its errors are thrown.
     *
     * @throws SampleException when the batch is marked failed
     */
    void closeAndThrowIfFailed() {
        if (failed()) {
            List<SampleError> failures = errors;
            close();
            throw new SampleException(epoch, batchIndex, failures);
        }
    }

    /** Invalidates every segment handed out, then returns the slot. Idempotent. */
    @Override
    public void close() {
        lease.giveBack();
    }

    /** Invalidates the segments without returning the slot: the ring is going away. */
    void abandon() {
        lease.abandon();
    }
}
