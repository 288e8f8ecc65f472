package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * The GPU decode's colour step: nvJPEG's planar YCbCr ({@code NVJPEG_OUTPUT_YUV}) to interleaved RGB,
 * upsampled and converted as libjpeg-turbo does by default ({@code native/cuda/ycc.cu}), so that
 * nvJPEG's images have the CPU path's chroma, not nvJPEG's own replicated chroma.
 *
 * <p>A batch: {@link #begin}, one {@link #add} per image, {@link #launch}. Every job is checked here
 * before anything reaches the device: each plane inside the planes buffer, the output inside the
 * pixels buffer. The jobs go to the device in one copy from pinned staging, then one launch.
 *
 * <p>Owner: the decoder's thread ({@link GpuJpegDecoder}), with the context current. Two stagings
 * take the batches in turn, each rewritten only after the copy of the batch that last used it
 * completed ({@link StagingTurns}, as {@link DeviceResize}'s); the device's jobs are rewritten by a copy queued
 * behind the last batch's launch on the one stream.
 */
final class PlanesToRgb implements AutoCloseable {
    /** native/cuda/ycc.cu's {@code stoke_ycc_job}, field for field. */
    static final MemoryLayout JOB = MemoryLayout.structLayout(
            JAVA_LONG.withName("y"),
            JAVA_LONG.withName("cb"),
            JAVA_LONG.withName("cr"),
            JAVA_LONG.withName("dst"),
            JAVA_INT.withName("y_pitch"),
            JAVA_INT.withName("c_pitch"),
            JAVA_INT.withName("width"),
            JAVA_INT.withName("height"),
            JAVA_INT.withName("c_width"),
            JAVA_INT.withName("c_height"),
            JAVA_INT.withName("h_factor"),
            JAVA_INT.withName("v_factor"));

    private static final VarHandle Y = field("y");
    private static final VarHandle CB = field("cb");
    private static final VarHandle CR = field("cr");
    private static final VarHandle DST = field("dst");
    private static final VarHandle Y_PITCH = field("y_pitch");
    private static final VarHandle C_PITCH = field("c_pitch");
    private static final VarHandle WIDTH = field("width");
    private static final VarHandle HEIGHT = field("height");
    private static final VarHandle C_WIDTH = field("c_width");
    private static final VarHandle C_HEIGHT = field("c_height");
    private static final VarHandle H_FACTOR = field("h_factor");
    private static final VarHandle V_FACTOR = field("v_factor");

    private static VarHandle field(String name) {
        return JOB.varHandle(MemoryLayout.PathElement.groupElement(name)).withInvokeExactBehavior();
    }

    private final DeviceKernels kernels;
    private final int maxBatch;
    private final StagingTurns stagings;
    private final DeviceBuffer jobs;
    private MemorySegment staging;
    private int count;
    private int maxWidth;
    private int maxHeight;
    private CudaStream lastStream;
    private boolean closed;

    /** Converts batches of at most {@code maxBatch} images with {@code kernels} (loaded in the current context). */
    PlanesToRgb(CudaDriver driver, DeviceKernels kernels, int maxBatch) {
        if (maxBatch < 1 || maxBatch > 65535) {
            throw new IllegalArgumentException("batches of 1 to 65535 images, not " + maxBatch);
        }
        this.kernels = kernels;
        this.maxBatch = maxBatch;
        long bytes = maxBatch * JOB.byteSize();
        this.stagings = new StagingTurns(driver, bytes);
        try {
            this.jobs = DeviceBuffer.allocate(driver, bytes);
        } catch (RuntimeException e) {
            stagings.close();
            throw e;
        }
    }

    /** Starts a batch on the other staging, once the copy of the batch before the last out of it is done. */
    void begin() {
        checkOpen();
        staging = stagings.begin().segment();
        count = 0;
        maxWidth = 0;
        maxHeight = 0;
    }

    /**
     * Adds an image of {@code width x height}: its luma plane at {@code planes[yOffset]}, {@code
     * yPitch} bytes a row; its chroma planes at {@code cbOffset} and {@code crOffset}, {@code cWidth x
     * cHeight} samples, {@code cPitch} bytes a row, each luma sample being {@code hFactor x vFactor}
     * of a chroma one ({@code hFactor} 0: a grayscale image, no chroma read); written as packed RGB
     * rows at {@code pixels[dstOffset]}.
     *
     * @throws IndexOutOfBoundsException where a plane or the output leaves its buffer, or the chroma
     *     planes do not cover the image
     */
    void add(
            DeviceBuffer planes,
            long yOffset,
            int yPitch,
            long cbOffset,
            long crOffset,
            int cPitch,
            int width,
            int height,
            int cWidth,
            int cHeight,
            int hFactor,
            int vFactor,
            DeviceBuffer pixels,
            long dstOffset) {
        checkOpen();
        if (count == maxBatch) {
            throw new IllegalStateException("a batch holds at most " + maxBatch + " images");
        }
        if (width < 1 || height < 1 || yPitch < width) {
            throw new IndexOutOfBoundsException(width + " x " + height + " luma with rows " + yPitch + " bytes apart");
        }
        within(planes, yOffset, (long) (height - 1) * yPitch + width, "the luma plane");
        within(pixels, dstOffset, 3L * width * height, "the RGB output");
        if (hFactor != 0) {
            if (hFactor < 1
                    || vFactor < 1
                    || cWidth < 1
                    || cHeight < 1
                    || cPitch < cWidth
                    || (long) cWidth * hFactor < width
                    || (long) cHeight * vFactor < height) {
                throw new IndexOutOfBoundsException(cWidth + " x " + cHeight + " chroma (rows " + cPitch
                        + " bytes apart) at " + hFactor + " x " + vFactor + " do not cover " + width + " x " + height);
            }
            long plane = (long) (cHeight - 1) * cPitch + cWidth;
            within(planes, cbOffset, plane, "the Cb plane");
            within(planes, crOffset, plane, "the Cr plane");
        }
        long job = count * JOB.byteSize(); // the layout's handles take the job's offset: no slice per image
        Y.set(staging, job, planes.pointer() + yOffset);
        CB.set(staging, job, hFactor == 0 ? 0L : planes.pointer() + cbOffset);
        CR.set(staging, job, hFactor == 0 ? 0L : planes.pointer() + crOffset);
        DST.set(staging, job, pixels.pointer() + dstOffset);
        Y_PITCH.set(staging, job, yPitch);
        C_PITCH.set(staging, job, cPitch);
        WIDTH.set(staging, job, width);
        HEIGHT.set(staging, job, height);
        C_WIDTH.set(staging, job, cWidth);
        C_HEIGHT.set(staging, job, cHeight);
        H_FACTOR.set(staging, job, hFactor);
        V_FACTOR.set(staging, job, vFactor);
        maxWidth = Math.max(maxWidth, width);
        maxHeight = Math.max(maxHeight, height);
        count++;
    }

    private static void within(DeviceBuffer buffer, long offset, long bytes, String what) {
        if (offset < 0 || bytes < 0 || offset > buffer.byteSize() - bytes) {
            throw new IndexOutOfBoundsException(
                    what + ": " + bytes + " bytes at " + offset + " of a " + buffer.byteSize() + "-byte buffer");
        }
    }

    /** Queues the batch on {@code stream}: the jobs' copy, then the one launch. */
    void launch(CudaStream stream) {
        checkOpen();
        if (count == 0) {
            return;
        }
        lastStream = stream;
        jobs.copyFromHostAsync(0, staging, count * JOB.byteSize(), stream);
        stagings.copiesQueued(stream);
        kernels.yccToRgb(jobs, count, maxWidth, maxHeight, stream);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the colour step is closed");
        }
    }

    /** Waits for the last batch's launch on its stream, then frees the stagings and the device's jobs. */
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
        jobs.close();
    }
}
