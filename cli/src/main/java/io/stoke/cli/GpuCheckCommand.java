package io.stoke.cli;

import static io.stoke.ring.RingLayout.DTYPE_UINT8;
import static io.stoke.ring.RingLayout.LAYOUT_HWC;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import io.stoke.ffm.CudaContext;
import io.stoke.ffm.CudaDevice;
import io.stoke.ffm.CudaDriver;
import io.stoke.ffm.CudaEvent;
import io.stoke.ffm.CudaException;
import io.stoke.ffm.CudaStream;
import io.stoke.ffm.DeviceBuffer;
import io.stoke.ffm.HostRegistration;
import io.stoke.gpu.DeviceBatch;
import io.stoke.gpu.DeviceKernels;
import io.stoke.gpu.DeviceStage;
import io.stoke.gpu.NormalizeReference;
import io.stoke.loader.Batch;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import org.agrona.concurrent.SleepingIdleStrategy;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code stoke gpu-check}: checks the whole host-to-device path on this machine's GPU. Known
 * patterns go through a pinned ring, the GPU stage and back; the normalisation kernel is compared
 * with the CPU reference; pinned and pageable copy bandwidth are measured; and the overlap of copies
 * with a simulated compute kernel is reported.
 */
@Command(
        name = "gpu-check",
        mixinStandardHelpOptions = true,
        description = {
            "Checks the GPU path: pattern round trip through the pinned ring and the GPU stage, the",
            "normalisation kernel against the CPU reference, pinned vs pageable bandwidth, and copy/compute overlap.",
            "Exit codes: 0 all good, 1 a check failed, 3 no CUDA driver or device."
        })
public final class GpuCheckCommand implements Callable<Integer> {
    /** Exit code when this machine has no CUDA driver or no device. */
    public static final int EXIT_NO_GPU = 3;

    @Spec
    CommandSpec spec;

    @Option(names = "--device", description = "CUDA device ordinal (default: ${DEFAULT-VALUE})")
    int device = 0;

    @Option(names = "--mib", description = "MiB per bandwidth copy (default: ${DEFAULT-VALUE})")
    int mib = 64;

    @Option(
            names = "--iterations",
            description = "copies per bandwidth and overlap measurement (default: ${DEFAULT-VALUE})")
    int iterations = 10;

    @Option(
            names = "--stage-batch",
            description = "samples per batch in the GPU stage's rate check (default: ${DEFAULT-VALUE})")
    int stageBatch = 256;

    @Option(
            names = "--stage-crop",
            description = "C: each sample of the stage's rate check is C x C x 3 uint8 (default: ${DEFAULT-VALUE})")
    int stageCrop = 224;

    @Option(
            names = "--compute-ms",
            description = "length of the simulated compute kernel, ms (default: ${DEFAULT-VALUE})")
    double computeMs = 20;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (mib < 1 || iterations < 1 || computeMs < 0 || stageBatch < 1 || stageCrop < 1) {
            err.println("stoke gpu-check: --mib, --iterations, --stage-batch and --stage-crop must be positive, "
                    + "--compute-ms not negative");
            return Main.EXIT_USAGE;
        }
        CudaDriver.Availability a = CudaDriver.tryLoad();
        if (a.driver().isEmpty()) {
            err.println("stoke gpu-check: " + a.reason());
            return EXIT_NO_GPU;
        }
        CudaDriver driver = a.driver().get();
        CudaContext ctx;
        try {
            driver.init();
            int count = driver.deviceCount();
            if (count == 0 || device < 0 || device >= count) {
                err.println("stoke gpu-check: the CUDA driver (" + driver.library() + ") reports " + count
                        + " device(s); no device " + device + " to check");
                return EXIT_NO_GPU;
            }
            ctx = CudaContext.retainPrimary(driver, device);
        } catch (CudaException e) {
            err.println("stoke gpu-check: the CUDA driver cannot be used: " + e.getMessage());
            return e.result() == CudaDriver.CUDA_ERROR_NO_DEVICE ? EXIT_NO_GPU : Main.EXIT_FAILED;
        }
        boolean ok = true;
        try (ctx) {
            int v = driver.driverVersion();
            CudaDevice d = ctx.device();
            out.printf("driver     %s, CUDA %d.%d%n", driver.library(), v / 1000, (v % 1000) / 10);
            out.printf("device     %s%n", d.describe());
            ok &= patterns(driver, out);
            ok &= normalise(driver, out);
            bandwidth(driver, out);
            stageRate(driver, out);
            overlap(driver, out);
        } catch (CudaException e) {
            err.println("stoke gpu-check: " + e.getMessage());
            return Main.EXIT_FAILED;
        }
        out.println(ok ? "result     all checks passed" : "result     FAILED");
        out.flush();
        return ok ? 0 : Main.EXIT_FAILED;
    }

    /** A ring of small batches filled with a per-batch pattern, and a supplier over it. */
    private static final class PatternRing implements Supplier<Batch>, AutoCloseable {
        final RingGeometry g = new RingGeometry(3, 8, DTYPE_UINT8, LAYOUT_HWC, 64, 48, 3);
        final SlotRing ring = SlotRing.allocate(g);
        final SlotHeader header = new SlotHeader();
        final int total;
        int produced;
        int taken;

        PatternRing(int total) {
            this.total = total;
        }

        static byte value(long seq, long offset) {
            return (byte) (offset * 251 + seq * 13 + (offset >>> 11));
        }

        @Override
        public Batch get() {
            if (taken == total) {
                return null;
            }
            // Single-threaded: fill a slot when one is free (the stage returns them as copies complete).
            int slot;
            while ((slot = ring.acquire(new SleepingIdleStrategy(100_000), () -> true)) < 0) {
                Thread.onSpinWait();
            }
            header.wrap(ring.slot(slot)).sequence(produced).sampleCount(g.samplesPerSlot());
            MemorySegment px = ring.pixels(slot);
            for (long o = 0; o < px.byteSize(); o++) {
                px.set(JAVA_BYTE, o, value(produced, o));
            }
            produced++;
            taken++;
            // Handed straight to the stage (no ready queue: producer and consumer are this one thread).
            return new Batch(g, slot, ring.slot(slot), List.of(), 0, ring::release);
        }

        @Override
        public void close() {
            ring.close();
        }
    }

    private boolean patterns(CudaDriver driver, PrintWriter out) {
        int batches = 12;
        long mismatches = 0;
        try (PatternRing src = new PatternRing(batches);
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
                        if (back.get(JAVA_BYTE, o) != PatternRing.value(b.sequence(), o)) {
                            mismatches++;
                        }
                    }
                }
            }
        }
        out.printf(
                "patterns   %d batches through the pinned ring and the GPU stage and back: %s%n",
                batches, mismatches == 0 ? "OK" : mismatches + " BYTES DIFFER");
        return mismatches == 0;
    }

    private boolean normalise(CudaDriver driver, PrintWriter out) {
        float[] mean = TransformSpec.IMAGENET_MEAN;
        float[] std = TransformSpec.IMAGENET_STD;
        int batches = 4;
        long differing = 0;
        double maxDiff = 0;
        try (PatternRing src = new PatternRing(batches);
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
                        input.set(JAVA_BYTE, o, PatternRing.value(b.sequence(), o));
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
        out.printf(
                "normalise  uint8 NHWC -> float32 NCHW kernel vs CPU reference: %s%n",
                differing == 0 ? "OK (bit-identical)" : differing + " VALUES DIFFER, max |diff| " + maxDiff);
        return differing == 0;
    }

    private void bandwidth(CudaDriver driver, PrintWriter out) {
        long bytes = (long) mib << 20;
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
        double pinnedGBs = pinnedRate(driver, bytes, iterations);
        out.printf(
                "bandwidth  host->device, %d x %d MiB: pinned (cuMemHostRegister + cuMemcpyHtoDAsync) %.2f GB/s,"
                        + " pageable (cuMemcpyHtoD) %.2f GB/s, ratio %.2fx%n",
                iterations, mib, pinnedGBs, pageableGBs, pinnedGBs / pageableGBs);
    }

    /** GB/s of {@code copies} back-to-back copies of one registered host buffer of {@code bytes}, timed by events. */
    private static double pinnedRate(CudaDriver driver, long bytes, int copies) {
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
    private void stageRate(CudaDriver driver, PrintWriter out) {
        RingGeometry g = new RingGeometry(4, stageBatch, DTYPE_UINT8, LAYOUT_HWC, stageCrop, stageCrop, 3);
        long bytes = g.sampleBytes() * stageBatch;
        int batches = Math.max(8, 4 * iterations);
        int warmup = 4;
        long nanos;
        try (SlotsAsTheyAre src = new SlotsAsTheyAre(g, warmup + batches);
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
        double stageGBs = (double) bytes * batches / nanos;
        double peakGBs = pinnedRate(driver, bytes, batches);
        out.printf(
                "stage      %d batches of %d x %dx%dx3 uint8 (%.1f MB) from pinned ring slots through the GPU stage:"
                        + " %.2f GB/s, %.0f%% of one registered buffer copied back to back (%.2f GB/s)%n",
                batches, stageBatch, stageCrop, stageCrop, bytes / 1e6, stageGBs, 100 * stageGBs / peakGBs, peakGBs);
    }

    /** A ring whose slots are handed to the stage as they are, as fast as the stage frees them. */
    private static final class SlotsAsTheyAre implements Supplier<Batch>, AutoCloseable {
        final SlotRing ring;
        final SlotHeader header = new SlotHeader();
        final int total;
        int produced;

        SlotsAsTheyAre(RingGeometry g, int total) {
            this.ring = SlotRing.allocate(g);
            this.total = total;
        }

        @Override
        public Batch get() {
            if (produced == total) {
                return null;
            }
            int slot;
            while ((slot = ring.acquire(new SleepingIdleStrategy(10_000), () -> true)) < 0) {
                Thread.onSpinWait();
            }
            RingGeometry g = ring.geometry();
            header.wrap(ring.slot(slot)).sequence(produced).sampleCount(g.samplesPerSlot());
            produced++;
            return new Batch(g, slot, ring.slot(slot), List.of(), 0, ring::release);
        }

        @Override
        public void close() {
            ring.close();
        }
    }

    private void overlap(CudaDriver driver, PrintWriter out) {
        long bytes = (long) mib << 20;
        long spinNanos = (long) (computeMs * 1e6);
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
                // 100%: the shorter of the two was hidden entirely behind the longer; 0%: they ran in series.
                double hidden = copyAlone + computeAlone - both;
                double pct = 100.0
                        * Math.max(0, Math.min(hidden, Math.min(copyAlone, computeAlone)))
                        / Math.max(1, Math.min(copyAlone, computeAlone));
                out.printf(
                        "overlap    %d x (%d MiB copy | %.1f ms compute kernel): copies %.1f ms, compute %.1f ms,"
                                + " together %.1f ms -> %.0f%% of the shorter hidden%n",
                        iterations, mib, computeMs, copyAlone / 1e6, computeAlone / 1e6, both / 1e6, pct);
            }
        }
    }

    private static long timed(Runnable r) {
        long t0 = System.nanoTime();
        r.run();
        return System.nanoTime() - t0;
    }
}
