package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaModule;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/**
 * Stoke's kernels ({@code native/cuda/normalize.cu}, {@code resize.cu} and {@code ycc.cu}), loaded from the PTX committed as a resource
 * and JIT-compiled by the driver for whatever GPU is present. One thread launches at a time (the
 * parameter block is reused: the driver copies kernel arguments during {@code cuLaunchKernel}).
 */
public final class DeviceKernels implements AutoCloseable {
    /** Classpath resource holding the PTX (compute_75, PTX ISA of CUDA 13). */
    public static final String PTX_RESOURCE = "/io/stoke/gpu/stoke_kernels.ptx";

    public static final String NORMALIZE = "stoke_normalize_u8_nhwc_to_f32_nchw";
    public static final String SPIN = "stoke_spin";
    public static final String RESAMPLE_H = "stoke_resample_h_batch";
    public static final String RESAMPLE_V = "stoke_resample_v_batch";
    public static final String YCC = "stoke_ycc_rgb_batch";
    /** The resample passes' blocks: 16 x 16 threads, each one output pixel. */
    private static final int TILE = 16;

    private static final int BLOCK = 256;
    /** The grid-stride loop covers the rest; more blocks than this only adds scheduling. */
    private static final int MAX_GRID = 1 << 16;

    private final CudaDriver driver;
    private final CudaModule module;
    private final MemorySegment normalize;
    private final MemorySegment spin;
    private final MemorySegment resampleH;
    private final MemorySegment resampleV;
    private final MemorySegment ycc;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment values; // argument values, at fixed offsets
    private final MemorySegment pointers; // void*[10] into values

    /** Loads the module into the current context. */
    public DeviceKernels(CudaDriver driver) {
        this.driver = driver;
        this.module = CudaModule.loadPtx(driver, ptx());
        try {
            this.normalize = module.function(NORMALIZE);
            this.spin = module.function(SPIN);
            this.resampleH = module.function(RESAMPLE_H);
            this.resampleV = module.function(RESAMPLE_V);
            this.ycc = module.function(YCC);
        } catch (RuntimeException e) {
            module.close();
            arena.close();
            throw e;
        }
        values = arena.allocate(64, 8);
        pointers = arena.allocate(ADDRESS, 10);
        // normalize(src u64 @0, dst u64 @8, pixels u32 @16, hw u32 @20, mean f32[3] @24, std f32[3] @36)
        long[] offsets = {0, 8, 16, 20, 24, 28, 32, 36, 40, 44};
        for (int i = 0; i < offsets.length; i++) {
            pointers.setAtIndex(ADDRESS, i, values.asSlice(offsets[i]));
        }
    }

    /** The PTX text of {@link #PTX_RESOURCE}. */
    public static String ptx() {
        try (InputStream in = DeviceKernels.class.getResourceAsStream(PTX_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + PTX_RESOURCE + " is missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Queues the normalisation of {@code n} uint8 HWC samples of {@code h x w} from {@code src} into
     * float32 CHW in {@code dst}, on {@code stream}. Both buffers are checked to be large enough.
     */
    public synchronized void normalize(
            DeviceBuffer src, DeviceBuffer dst, int n, int h, int w, float[] mean, float[] std, CudaStream stream) {
        long hw = (long) h * w;
        long pixels = n * hw;
        if (n < 0 || h < 1 || w < 1 || pixels > 0xFFFF_FFFFL || mean.length != 3 || std.length != 3) {
            throw new IllegalArgumentException("cannot normalise n=" + n + " h=" + h + " w=" + w);
        }
        if (src.byteSize() < pixels * 3 || dst.byteSize() < pixels * 12) {
            throw new IndexOutOfBoundsException("normalising " + pixels + " pixels needs " + pixels * 3 + " + "
                    + pixels * 12 + " device bytes, buffers hold " + src.byteSize() + " and " + dst.byteSize());
        }
        if (pixels == 0) {
            return;
        }
        values.set(JAVA_LONG, 0, src.pointer());
        values.set(JAVA_LONG, 8, dst.pointer());
        values.set(JAVA_INT, 16, (int) pixels);
        values.set(JAVA_INT, 20, (int) hw);
        for (int c = 0; c < 3; c++) {
            values.set(JAVA_FLOAT, 24 + 4L * c, mean[c]);
            values.set(JAVA_FLOAT, 36 + 4L * c, std[c]);
        }
        int grid = (int) Math.min((pixels + BLOCK - 1) / BLOCK, MAX_GRID);
        driver.check(
                driver.cuLaunchKernel(
                        normalize, grid, 1, 1, BLOCK, 1, 1, 0, stream.handle(), pointers, MemorySegment.NULL),
                "cuLaunchKernel(" + NORMALIZE + ")");
    }

    /**
     * Queues both resample passes of {@code n} jobs ({@code native/cuda/resize.cu}): the jobs at
     * {@code jobs}' start, their tables in {@code tables}; the grid covers the largest job's
     * {@code cols x rows} (horizontal) and {@code cols x outRows} (vertical). The caller
     * ({@link DeviceResize}) has checked every job's ranges.
     */
    public synchronized void resample(
            DeviceBuffer jobs, DeviceBuffer tables, int n, int cols, int rows, int outRows, CudaStream stream) {
        if (n < 1 || n > 65535 || cols < 1 || rows < 1 || outRows < 1) {
            throw new IllegalArgumentException(
                    "cannot resample " + n + " jobs of up to " + cols + " x " + rows + " -> " + outRows + " rows");
        }
        values.set(JAVA_LONG, 0, jobs.pointer());
        values.set(JAVA_LONG, 8, tables.pointer());
        int gx = (cols + TILE - 1) / TILE;
        driver.check(
                driver.cuLaunchKernel(
                        resampleH,
                        gx,
                        (rows + TILE - 1) / TILE,
                        n,
                        TILE,
                        TILE,
                        1,
                        0,
                        stream.handle(),
                        pointers,
                        MemorySegment.NULL),
                "cuLaunchKernel(" + RESAMPLE_H + ")");
        driver.check(
                driver.cuLaunchKernel(
                        resampleV,
                        gx,
                        (outRows + TILE - 1) / TILE,
                        n,
                        TILE,
                        TILE,
                        1,
                        0,
                        stream.handle(),
                        pointers,
                        MemorySegment.NULL),
                "cuLaunchKernel(" + RESAMPLE_V + ")");
    }

    /**
     * Queues the colour step of {@code n} jobs ({@code native/cuda/ycc.cu}) at {@code jobs}' start;
     * the grid covers the largest job's {@code width x height}. The caller ({@link PlanesToRgb}) has
     * checked every job's ranges.
     */
    public synchronized void yccToRgb(DeviceBuffer jobs, int n, int width, int height, CudaStream stream) {
        if (n < 1 || n > 65535 || width < 1 || height < 1) {
            throw new IllegalArgumentException(
                    "cannot convert " + n + " jobs of up to " + width + " x " + height + " pixels");
        }
        values.set(JAVA_LONG, 0, jobs.pointer());
        driver.check(
                driver.cuLaunchKernel(
                        ycc,
                        (width + TILE - 1) / TILE,
                        (height + TILE - 1) / TILE,
                        n,
                        TILE,
                        TILE,
                        1,
                        0,
                        stream.handle(),
                        pointers,
                        MemorySegment.NULL),
                "cuLaunchKernel(" + YCC + ")");
    }

    /** Queues a single-thread kernel that busy-waits {@code nanos} ns on {@code stream}: simulated compute. */
    public synchronized void spin(long nanos, CudaStream stream) {
        if (nanos < 0) {
            throw new IllegalArgumentException("negative duration");
        }
        values.set(JAVA_LONG, 0, nanos);
        driver.check(
                driver.cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream.handle(), pointers, MemorySegment.NULL),
                "cuLaunchKernel(" + SPIN + ")");
    }

    @Override
    public synchronized void close() {
        if (arena.scope().isAlive()) {
            arena.close();
            module.close();
        }
    }
}
