package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.cuda.PinnedHostMemory;
import io.stoke.loader.resample.ResampleTables;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * The GPU decode's resize: images nvJPEG decoded ({@link GpuJpegDecoder.Decoded}) resized and
 * cropped on the device into uint8 RGB samples, by Stoke's two resample passes
 * ({@code native/cuda/resize.cu}) with the coefficients the CPU's resampler computes
 * ({@link io.stoke.loader.resample.Resampler#evalTables}, {@code cropTables}): from the same decoded
 * pixels, the CPU's bytes. EXPERIMENTAL: run on the test doubles only so far (docs/gpu.md).
 *
 * <p>A batch: {@link #begin}, one {@link #add} per image, {@link #launch}. Every job is checked here
 * before anything reaches the device: its taps inside the decoded image, its output inside the
 * destination. The jobs and tables go to the device in one copy each from pinned staging, then
 * one launch per pass covers the batch.
 *
 * <p>Owner: one thread, with the context current. It owns its staging and device buffers. Two
 * stagings take the batches in turn, each rewritten only after the copies of the batch that last
 * used it completed (an event): a batch is staged while the device still decodes the one before
 * (whose jobs' copy is queued behind that decode), not after it. The device's jobs and tables are
 * rewritten by copies queued behind the last batch's passes on the one stream, and the scratch is
 * grown only after the stream drained.
 */
final class DeviceResize implements AutoCloseable {
    /** native/cuda/resize.cu's {@code stoke_resize_job}, field for field. */
    static final MemoryLayout JOB = MemoryLayout.structLayout(
            JAVA_LONG.withName("src"),
            JAVA_LONG.withName("src_pitch"),
            JAVA_LONG.withName("tmp"),
            JAVA_LONG.withName("dst"),
            JAVA_INT.withName("y_first"),
            JAVA_INT.withName("rows"),
            JAVA_INT.withName("cols"),
            JAVA_INT.withName("out_rows"),
            JAVA_INT.withName("h_taps"),
            JAVA_INT.withName("v_taps"),
            JAVA_INT.withName("tables"),
            JAVA_INT.withName("unused"));

    private static final VarHandle SRC = field("src");
    private static final VarHandle SRC_PITCH = field("src_pitch");
    private static final VarHandle TMP = field("tmp");
    private static final VarHandle DST = field("dst");
    private static final VarHandle Y_FIRST = field("y_first");
    private static final VarHandle ROWS = field("rows");
    private static final VarHandle COLS = field("cols");
    private static final VarHandle OUT_ROWS = field("out_rows");
    private static final VarHandle H_TAPS = field("h_taps");
    private static final VarHandle V_TAPS = field("v_taps");
    private static final VarHandle TABLES = field("tables");

    private static VarHandle field(String name) {
        return JOB.varHandle(MemoryLayout.PathElement.groupElement(name)).withInvokeExactBehavior();
    }

    private final CudaDriver driver;
    private final DeviceKernels kernels;
    private final int maxBatch;
    private final long[] tmpOffset;
    /** Each: jobs (maxBatch x 64 bytes), then the tables' ints; made and grown by {@link #ensureStaging}. */
    private final StagingTurns stagings;

    private PinnedHostMemory staging; // this batch's
    private DeviceBuffer jobs;
    private DeviceBuffer tables;
    private DeviceBuffer tmp;
    private int count;
    private long tableInts;
    private long tmpBytes;
    private int maxCols;
    private int maxRows;
    private int maxOutRows;
    /** The stream of the last {@link #launch}: its passes may still use the buffers when {@link #close} comes. */
    private CudaStream lastStream;

    private boolean closed;

    /** Resizes batches of at most {@code maxBatch} images with {@code kernels} (loaded in the current context). */
    public DeviceResize(CudaDriver driver, DeviceKernels kernels, int maxBatch) {
        if (maxBatch < 1 || maxBatch > 65535) {
            throw new IllegalArgumentException("batches of 1 to 65535 images, not " + maxBatch);
        }
        this.driver = driver;
        this.kernels = kernels;
        this.maxBatch = maxBatch;
        this.tmpOffset = new long[maxBatch];
        this.stagings = new StagingTurns(driver, 0);
        try {
            this.jobs = DeviceBuffer.allocate(driver, maxBatch * JOB.byteSize());
        } catch (RuntimeException e) {
            stagings.close();
            throw e;
        }
    }

    /**
     * Starts a batch on the other staging; waits until the jobs and tables of the batch before the
     * last, which used it, have reached the device (long since, normally: the last batch's may not).
     */
    public void begin() {
        checkOpen();
        staging = stagings.begin();
        count = 0;
        tableInts = 0;
        tmpBytes = 0;
        maxCols = 0;
        maxRows = 0;
        maxOutRows = 0;
    }

    /**
     * Adds image {@code i} of {@code decoded}, resized by {@code t}, written as {@code t.cols() x
     * t.outRows()} RGB pixels at {@code dst[dstOffset]}.
     *
     * @throws IndexOutOfBoundsException where the tables read past the image or the output does not fit
     */
    public void add(GpuJpegDecoder.Decoded decoded, int i, ResampleTables t, DeviceBuffer dst, long dstOffset) {
        checkOpen();
        if (count == maxBatch) {
            throw new IllegalStateException("a batch holds at most " + maxBatch + " images");
        }
        int width = decoded.width(i);
        int height = decoded.height(i);
        int cols = t.cols();
        int outRows = t.outRows();
        if (t.columnsRead() > width || t.yFirst() < 0 || t.yFirst() + t.rows() > height) {
            throw new IndexOutOfBoundsException("the resize reads columns up to " + t.columnsRead() + " and rows "
                    + t.yFirst() + "+" + t.rows() + " of a " + width + " x " + height + " image");
        }
        long outBytes = 3L * cols * outRows;
        if (dstOffset < 0 || dstOffset > dst.byteSize() - outBytes) {
            throw new IndexOutOfBoundsException(
                    outBytes + " output bytes at " + dstOffset + " of a " + dst.byteSize() + "-byte buffer");
        }
        ensureStaging(tableInts + t.ints());
        MemorySegment host = staging.segment();
        long job = count * JOB.byteSize(); // the layout's handles take the job's offset: no slice per image
        SRC.set(host, job, decoded.deviceAddress(i));
        SRC_PITCH.set(host, job, decoded.pitch(i));
        DST.set(host, job, dst.pointer() + dstOffset);
        Y_FIRST.set(host, job, t.yFirst());
        ROWS.set(host, job, t.rows());
        COLS.set(host, job, cols);
        OUT_ROWS.set(host, job, outRows);
        H_TAPS.set(host, job, t.hTaps());
        V_TAPS.set(host, job, t.vTaps());
        TABLES.set(host, job, Math.toIntExact(tableInts));
        t.writeTo(staging.segment(), tablesAt() + 4 * tableInts);
        tableInts += t.ints();
        tmpOffset[count] = tmpBytes;
        tmpBytes += (4L * cols * t.rows() + 255) & -256L;
        maxCols = Math.max(maxCols, cols);
        maxRows = Math.max(maxRows, t.rows());
        maxOutRows = Math.max(maxOutRows, outRows);
        count++;
    }

    /** Queues the batch on {@code stream}: the jobs' and tables' copies, then both passes. */
    public void launch(CudaStream stream) {
        checkOpen();
        if (count == 0) {
            return;
        }
        lastStream = stream;
        if (tmp == null || tmp.byteSize() < tmpBytes) {
            stream.synchronize(); // the last batch's passes may still read the scratch
            if (tmp != null) {
                tmp.close();
                tmp = null;
            }
            tmp = DeviceBuffer.allocate(driver, tmpBytes + tmpBytes / 2);
        }
        if (tables == null || tables.byteSize() < 4 * tableInts) {
            stream.synchronize();
            if (tables != null) {
                tables.close();
                tables = null;
            }
            tables = DeviceBuffer.allocate(driver, 4 * (tableInts + tableInts / 2));
        }
        MemorySegment host = staging.segment();
        for (int k = 0; k < count; k++) {
            TMP.set(host, k * JOB.byteSize(), tmp.pointer() + tmpOffset[k]);
        }
        jobs.copyFromHostAsync(0, host.asSlice(0, count * JOB.byteSize()), stream);
        tables.copyFromHostAsync(0, host.asSlice(tablesAt(), 4 * tableInts), stream);
        stagings.copiesQueued(stream);
        kernels.resample(jobs, tables, count, maxCols, maxRows, maxOutRows, stream);
    }

    private long tablesAt() {
        return maxBatch * JOB.byteSize();
    }

    /** Room in the staging for {@code ints} table ints after the jobs; a larger staging keeps the jobs written so far. */
    private void ensureStaging(long ints) {
        long need = tablesAt() + 4 * ints;
        if (staging != null && staging.segment().byteSize() >= need) {
            return;
        }
        PinnedHostMemory bigger = PinnedHostMemory.allocate(driver, need + need / 2);
        if (staging != null) {
            // Its copies are done (begin waited for them): only this batch's writes are in it.
            MemorySegment.copy(staging.segment(), 0, bigger.segment(), 0, tablesAt() + 4 * tableInts);
        }
        stagings.replace(bigger); // closes the one it replaces
        staging = bigger;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the device resize is closed");
        }
    }

    /** Waits for the last batch's passes on their stream, then frees the staging and device buffers. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (lastStream != null && !lastStream.isClosed()) {
            lastStream.synchronize(); // even where the caller left on an exception
        }
        stagings.close(); // its copies waited for
        for (AutoCloseable c : new AutoCloseable[] {jobs, tables, tmp}) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }
    }
}
