package io.stoke.gpu;

import static io.stoke.ring.RingLayout.DTYPE_UINT8;
import static io.stoke.ring.RingLayout.LAYOUT_HWC;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.CudaException;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.cuda.HostRegistration;
import io.stoke.ffm.cuda.Nvjpeg;
import io.stoke.ffm.cuda.NvjpegException;
import io.stoke.loader.Batch;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.agrona.concurrent.SleepingIdleStrategy;

/**
 * Checks and measures the host-to-device path on one GPU (what {@code stoke gpu-check} runs):
 * known patterns through a pinned ring, the {@link DeviceStage} and back; the normalisation kernel
 * against {@link NormalizeReference}; pinned and pageable copy bandwidth; the stage's own rate
 * against back-to-back copies of one registered buffer; and the overlap of copies with a compute
 * kernel. Each method returns its figures; saying them is the caller's.
 *
 * <p>{@link #open} makes the device's context current on the calling thread: run the checks there.
 */
public final class GpuCheck implements AutoCloseable {
    /**
     * How much to copy and for how long.
     *
     * @param mib        MiB per bandwidth and overlap copy
     * @param iterations copies per bandwidth and overlap measurement
     * @param stageBatch samples per batch in the stage's rate check
     * @param stageCrop  each sample of the stage's rate check is {@code stageCrop}² x 3 uint8
     * @param computeMs  length of the simulated compute kernel in the overlap check
     */
    public record Settings(int mib, int iterations, int stageBatch, int stageCrop, double computeMs) {
        public Settings {
            if (mib < 1 || iterations < 1 || computeMs < 0 || stageBatch < 1 || stageCrop < 1) {
                throw new IllegalArgumentException(
                        "mib, iterations, stageBatch and stageCrop must be positive," + " computeMs not negative");
            }
        }
    }

    /** Batches sent through the ring and the stage and read back, and the bytes that came back different. */
    public record Patterns(int batches, long bytesDiffering) {
        public boolean ok() {
            return bytesDiffering == 0;
        }
    }

    /** The kernel's float32 values that are not bit-identical to the CPU reference's, and the largest difference. */
    public record Normalise(long valuesDiffering, double maxDifference) {
        public boolean ok() {
            return valuesDiffering == 0;
        }
    }

    /** Host-to-device rates in GB/s: a registered buffer copied asynchronously, and a pageable one copied synchronously. */
    public record Bandwidth(double pinnedGBs, double pageableGBs) {}

    /** The stage's rate over {@code batches} of {@code batchBytes}, and one registered buffer of that size copied back to back. */
    public record StageRate(int batches, long batchBytes, double stageGBs, double peakGBs) {}

    /** Copies alone, compute alone and both on two streams, in nanoseconds. */
    public record Overlap(long copiesNanos, long computeNanos, long togetherNanos) {
        /** 100: the shorter of the two was hidden entirely behind the longer; 0: they ran in series. */
        public double hiddenPercent() {
            double hidden = copiesNanos + computeNanos - togetherNanos;
            double shorter = Math.min(copiesNanos, computeNanos);
            return 100.0 * Math.max(0, Math.min(hidden, shorter)) / Math.max(1, shorter);
        }
    }

    /**
     * nvJPEG's decode against TurboJPEG's on the same files.
     *
     * @param backend            nvJPEG's decoder that ran (HARDWARE or GPU_HYBRID)
     * @param backendNote        why the hardware engine was not used, or null
     * @param files              files given
     * @param onGpu              files nvJPEG decoded
     * @param cpuReasons         for the rest, each reason given and how many files it was given for
     * @param meanDifference     mean absolute difference of a channel value, over every image nvJPEG decoded
     * @param largestDifference  the largest one
     * @param largestFile        the file it is in, or null
     * @param gpuImagesPerSecond the files given over the GPU decode's time (each batch's call and its stream's work)
     * @param gpuResizeImagesPerSecond the same with the device's resize of every batch after its decode
     *     (the tables made on the host, the jobs copied, both passes run), to the stream's end
     * @param cpuImagesPerSecond TurboJPEG's full-size decodes of the same images, one thread
     * @param resizeBytes        bytes of the device's resize (Resize 256 + CenterCrop 224) compared
     * @param resizeBytesDiffering those that differ from the CPU resampler's on the same decoded pixels
     */
    public record Decode(
            String backend,
            String backendNote,
            int files,
            int onGpu,
            Map<String, Integer> cpuReasons,
            double meanDifference,
            int largestDifference,
            Path largestFile,
            double gpuImagesPerSecond,
            double gpuResizeImagesPerSecond,
            double cpuImagesPerSecond,
            long resizeBytes,
            long resizeBytesDiffering) {}

    /**
     * The GPU decode stage's images against one CPU path's, after the evaluation transform.
     *
     * @param against     which CPU path, in words
     * @param images      images nvJPEG decoded and both sides delivered
     * @param meanDifference mean absolute difference of a channel value
     * @param largestDifference the largest, in any image
     * @param largestFile the file it is in (null when no image was compared)
     * @param overTarget  images with a value more than {@link StageComparison#TARGET} levels apart
     */
    public record BatchDifference(
            String against,
            int images,
            double meanDifference,
            int largestDifference,
            Path largestFile,
            int overTarget) {}

    /** A check could not run: the CUDA driver refused a call (the message names it). */
    public static final class Failed extends RuntimeException {
        Failed(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final CudaDriver driver;
    private final int ordinal;
    private final CudaContext context;
    private final Settings settings;

    private GpuCheck(CudaDriver driver, int ordinal, CudaContext context, Settings settings) {
        this.driver = driver;
        this.ordinal = ordinal;
        this.context = context;
        this.settings = settings;
    }

    /**
     * Opens device {@code device} for the checks: loads the CUDA driver, checks that it has that
     * device and retains the device's primary context, current on the calling thread until
     * {@link #close}.
     *
     * @throws DeviceUnavailableException no driver, no such device, or a driver that finds no
     *     device: one sentence for the user
     * @throws Failed the driver is there but refused a call
     */
    public static GpuCheck open(int device, Settings settings) {
        CudaDriver.Availability a = CudaDriver.tryLoad();
        if (a.driver().isEmpty()) {
            throw new DeviceUnavailableException(a.reason(), null);
        }
        CudaDriver driver = a.driver().get();
        try {
            driver.init();
            int count = driver.deviceCount();
            if (count == 0 || device < 0 || device >= count) {
                throw new DeviceUnavailableException(
                        "the CUDA driver (" + driver.library() + ") reports " + count + " device(s); no device "
                                + device + " to check",
                        null);
            }
            return new GpuCheck(driver, device, CudaContext.retainPrimary(driver, device), settings);
        } catch (CudaException e) {
            String message = "the CUDA driver cannot be used: " + e.getMessage();
            if (e.result() == CudaDriver.CUDA_ERROR_NO_DEVICE) {
                throw new DeviceUnavailableException(message, e);
            }
            throw new Failed(message, e);
        }
    }

    /** The driver library's path, as loaded. */
    public String driverLibrary() {
        return driver.library();
    }

    /** The CUDA version the driver supports, as {@code cuDriverGetVersion} gives it (1000 x major + 10 x minor). */
    public int driverVersion() {
        return refusedAsFailed(driver::driverVersion);
    }

    /** The device checked, as the driver describes it (name, memory, compute capability, ...). */
    public String device() {
        return context.device().describe();
    }

    /**
     * Decodes {@code files} (JPEGs) with nvJPEG in batches of {@code batch} and compares every image it
     * takes with TurboJPEG's full-size decode.
     *
     * @throws Failed the driver or nvJPEG refused a call
     */
    public Decode decode(Nvjpeg nvjpeg, List<Path> files, int batch) {
        try {
            return refusedAsFailed(() -> DecodeComparison.run(driver, nvjpeg, files, batch));
        } catch (NvjpegException e) {
            throw new Failed(e.getMessage(), e);
        }
    }

    /**
     * Runs {@code files} (JPEGs under {@code dir}) through the GPU decode stage and through the CPU
     * loader, in batches of {@code batch}, and compares the images nvJPEG decoded: against the CPU's
     * full-size decodes, then its default.
     *
     * @throws Failed the driver or nvJPEG refused a call
     */
    public List<BatchDifference> batches(Nvjpeg nvjpeg, Path dir, List<Path> files, int batch) {
        try {
            return refusedAsFailed(() -> StageComparison.run(driver, ordinal, nvjpeg, dir, files, batch));
        } catch (NvjpegException | IllegalStateException e) {
            // IllegalStateException: the stage failed (its message says how, its cause why).
            throw new Failed(e.getMessage(), e);
        }
    }

    /** The JPEG files under {@code dir} (.jpg and .jpeg, any case), in name order, at most {@code limit}. */
    public static List<Path> jpegsUnder(Path dir, int limit) throws IOException {
        return DecodeComparison.jpegsUnder(dir, limit);
    }

    /** Releases the device's primary context. */
    @Override
    public void close() {
        refusedAsFailed(() -> {
            context.close();
            return null;
        });
    }

    /** Runs a measurement, saying a driver's refusal as {@link Failed}. */
    private static <T> T refusedAsFailed(Supplier<T> measurement) {
        try {
            return measurement.get();
        } catch (CudaException e) {
            throw new Failed(e.getMessage(), e);
        }
    }

    /** Known patterns through a pinned ring, the GPU stage and back. */
    public Patterns patterns() {
        return refusedAsFailed(this::measurePatterns);
    }

    private Patterns measurePatterns() {
        int batches = 12;
        long mismatches = 0;
        try (CheckRing src = CheckRing.patterns(batches);
                DeviceStage stage = DeviceStage.builder(src.ring, src)
                        .driver(driver)
                        .inFlight(2)
                        .build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment back = arena.allocate(src.g.sampleBytes() * src.g.samplesPerSlot());
            for (int s = 0; s < batches; s++) {
                try (DeviceBatch b = stage.next()) {
                    b.copyToHost(back);
                    for (long o = 0; o < b.byteSize(); o++) {
                        if (back.get(JAVA_BYTE, o) != CheckRing.value(b.sequence(), o)) {
                            mismatches++;
                        }
                    }
                }
            }
        }
        return new Patterns(batches, mismatches);
    }

    /** The uint8 NHWC to float32 NCHW kernel (ImageNet's mean and std) against the CPU reference. */
    public Normalise normalise() {
        return refusedAsFailed(this::measureNormalise);
    }

    private Normalise measureNormalise() {
        float[] mean = TransformSpec.IMAGENET_MEAN;
        float[] std = TransformSpec.IMAGENET_STD;
        int batches = 4;
        long differing = 0;
        double maxDiff = 0;
        try (CheckRing src = CheckRing.patterns(batches);
                DeviceStage stage = DeviceStage.builder(src.ring, src)
                        .driver(driver)
                        .inFlight(2)
                        .normalize(mean, std)
                        .build();
                Arena arena = Arena.ofConfined()) {
            RingGeometry g = src.g;
            long values = (long) g.samplesPerSlot() * g.d0() * g.d1() * 3;
            MemorySegment got = arena.allocate(values * 4);
            MemorySegment want = arena.allocate(values * 4);
            MemorySegment input = arena.allocate(values);
            for (int s = 0; s < batches; s++) {
                try (DeviceBatch b = stage.next()) {
                    b.copyToHost(got);
                    for (long o = 0; o < values; o++) {
                        input.set(JAVA_BYTE, o, CheckRing.value(b.sequence(), o));
                    }
                    NormalizeReference.normalize(input, want, g.samplesPerSlot(), g.d0(), g.d1(), mean, std);
                    for (long i = 0; i < values; i++) {
                        float x = got.getAtIndex(JAVA_FLOAT, i);
                        float y = want.getAtIndex(JAVA_FLOAT, i);
                        if (Float.floatToRawIntBits(x) != Float.floatToRawIntBits(y)) {
                            differing++;
                            maxDiff = Math.max(maxDiff, Math.abs((double) x - y));
                        }
                    }
                }
            }
        }
        return new Normalise(differing, maxDiff);
    }

    /** Pinned ({@code cuMemHostRegister} + {@code cuMemcpyHtoDAsync}) against pageable ({@code cuMemcpyHtoD}) copies. */
    public Bandwidth bandwidth() {
        return refusedAsFailed(this::measureBandwidth);
    }

    private Bandwidth measureBandwidth() {
        long bytes = (long) settings.mib() << 20;
        int iterations = settings.iterations();
        double pageableGBs;
        try (Arena arena = Arena.ofShared();
                DeviceBuffer dev = DeviceBuffer.allocate(driver, bytes)) {
            MemorySegment pageable = arena.allocate(bytes, 4096);
            pageable.fill((byte) 1);
            dev.copyFromHost(0, pageable); // warm-up: first touch, driver staging buffers
            long t0 = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                dev.copyFromHost(0, pageable);
            }
            pageableGBs = (double) bytes * iterations / (System.nanoTime() - t0);
        }
        return new Bandwidth(pinnedRate(bytes, iterations), pageableGBs);
    }

    /** GB/s of {@code copies} back-to-back copies of one registered host buffer of {@code bytes}, timed by events. */
    private double pinnedRate(long bytes, int copies) {
        try (Arena arena = Arena.ofShared();
                DeviceBuffer dev = DeviceBuffer.allocate(driver, bytes);
                CudaStream stream = CudaStream.create(driver);
                CudaEvent start = CudaEvent.createTimed(driver);
                CudaEvent end = CudaEvent.createTimed(driver)) {
            MemorySegment pinnedMem = arena.allocate(bytes, 4096);
            pinnedMem.fill((byte) 2);
            try (HostRegistration pinned = HostRegistration.register(driver, pinnedMem)) {
                dev.copyFromHostAsync(0, pinned.memory(), stream); // warm-up
                start.record(stream);
                for (int i = 0; i < copies; i++) {
                    dev.copyFromHostAsync(0, pinned.memory(), stream);
                }
                end.record(stream);
                end.synchronize();
                return (double) bytes * copies / (end.elapsedMillis(start) * 1e6);
            }
        }
    }

    /**
     * The GPU stage's own rate: full-size uint8 batches taken from the slots of a pinned ring through
     * {@link DeviceStage} (its copier and reaper threads, events and device pool), against back-to-back
     * copies of one registered buffer of the same size. Nothing decodes: the slots are copied as they are.
     */
    public StageRate stageRate() {
        return refusedAsFailed(this::measureStageRate);
    }

    private StageRate measureStageRate() {
        int stageBatch = settings.stageBatch();
        RingGeometry g =
                new RingGeometry(4, stageBatch, DTYPE_UINT8, LAYOUT_HWC, settings.stageCrop(), settings.stageCrop(), 3);
        long bytes = g.sampleBytes() * stageBatch;
        int batches = Math.max(8, 4 * settings.iterations());
        int warmup = 4;
        long nanos;
        try (CheckRing src = CheckRing.asTheyAre(g, warmup + batches);
                DeviceStage stage = DeviceStage.builder(src.ring, src)
                        .driver(driver)
                        .inFlight(3)
                        .build()) {
            for (int i = 0; i < warmup; i++) {
                try (DeviceBatch b = stage.next()) {
                    b.awaitReady();
                }
            }
            long t0 = System.nanoTime();
            for (int i = 0; i < batches; i++) {
                try (DeviceBatch b = stage.next()) {
                    b.awaitReady();
                }
            }
            nanos = System.nanoTime() - t0;
        }
        return new StageRate(batches, bytes, (double) bytes * batches / nanos, pinnedRate(bytes, batches));
    }

    /** Copies on one stream beside a spinning kernel on another: how much of the shorter was hidden. */
    public Overlap overlap() {
        return refusedAsFailed(this::measureOverlap);
    }

    private Overlap measureOverlap() {
        long bytes = (long) settings.mib() << 20;
        int iterations = settings.iterations();
        long spinNanos = (long) (settings.computeMs() * 1e6);
        try (Arena arena = Arena.ofShared();
                DeviceBuffer dev = DeviceBuffer.allocate(driver, bytes);
                CudaStream copies = CudaStream.create(driver);
                CudaStream compute = CudaStream.create(driver);
                DeviceKernels kernels = new DeviceKernels(driver)) {
            try (HostRegistration pinned = HostRegistration.register(driver, arena.allocate(bytes, 4096))) {
                MemorySegment host = pinned.memory();
                kernels.spin(1000, compute); // warm-up: JIT and first launch
                compute.synchronize();
                long copyAlone = timed(() -> {
                    for (int i = 0; i < iterations; i++) {
                        dev.copyFromHostAsync(0, host, copies);
                    }
                    copies.synchronize();
                });
                long computeAlone = timed(() -> {
                    for (int i = 0; i < iterations; i++) {
                        kernels.spin(spinNanos, compute);
                    }
                    compute.synchronize();
                });
                long both = timed(() -> {
                    for (int i = 0; i < iterations; i++) {
                        kernels.spin(spinNanos, compute);
                        dev.copyFromHostAsync(0, host, copies);
                    }
                    copies.synchronize();
                    compute.synchronize();
                });
                return new Overlap(copyAlone, computeAlone, both);
            }
        }
    }

    /** The small ring the pattern and normalisation checks send through the stage. */
    private static final RingGeometry PATTERN_GEOMETRY = new RingGeometry(3, 8, DTYPE_UINT8, LAYOUT_HWC, 64, 48, 3);

    /**
     * A ring whose slots are handed straight to the stage (no ready queue: producer and consumer are
     * this one thread), each filled with a per-batch pattern first, or as it is (the rate check).
     */
    private static final class CheckRing implements Supplier<Batch>, AutoCloseable {
        final RingGeometry g;
        final SlotRing ring;
        final SlotHeader header = new SlotHeader();
        final SleepingIdleStrategy idle;
        final boolean pattern;
        final int total;
        int produced;

        /** {@code total} batches of {@link #PATTERN_GEOMETRY}, each filled with its pattern. */
        static CheckRing patterns(int total) {
            return new CheckRing(PATTERN_GEOMETRY, total, true, 100_000);
        }

        /** {@code total} batches of {@code g}, their slots copied as they are. */
        static CheckRing asTheyAre(RingGeometry g, int total) {
            return new CheckRing(g, total, false, 10_000);
        }

        private CheckRing(RingGeometry g, int total, boolean pattern, long sleepNanos) {
            this.g = g;
            this.ring = SlotRing.allocate(g);
            this.total = total;
            this.pattern = pattern;
            this.idle = new SleepingIdleStrategy(sleepNanos);
        }

        static byte value(long seq, long offset) {
            return (byte) (offset * 251 + seq * 13 + (offset >>> 11));
        }

        @Override
        public Batch get() {
            if (produced == total) {
                return null;
            }
            // A slot is free once the stage returns it, as its copy completes.
            int slot = ring.acquire(idle, () -> true);
            if (slot < 0) {
                throw new IllegalStateException("the check's ring was closed while it waited for a slot");
            }
            header.wrap(ring.slot(slot)).sequence(produced).sampleCount(g.samplesPerSlot());
            if (pattern) {
                MemorySegment px = ring.pixels(slot);
                for (long o = 0; o < px.byteSize(); o++) {
                    px.set(JAVA_BYTE, o, value(produced, o));
                }
            }
            produced++;
            return Batch.ofSlot(ring, slot, ring::release);
        }

        @Override
        public void close() {
            ring.close();
        }
    }

    private static long timed(Runnable r) {
        long t0 = System.nanoTime();
        r.run();
        return System.nanoTime() - t0;
    }
}
