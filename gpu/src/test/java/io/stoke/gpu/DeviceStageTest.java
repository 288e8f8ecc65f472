package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaException;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.loader.Batch;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingLayout;
import io.stoke.ring.SlotRing;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The GPU stage's logic, run on the CUDA driver test double (ffm-bindings/src/test/native/cuda-double): host memory
 * instead of a GPU, one thread per stream, events in stream order, a checksum per copy that
 * catches a host slot changed before its copy completed. This verifies the stage, not a GPU.
 */
class DeviceStageTest {
    static final Path DOUBLE_DIR = Path.of("target", "cuda-double");
    static final int H = 8;
    static final int W = 6;

    static final List<String> LIVE = List.of(
            "live_device_allocs",
            "live_pinned_ranges",
            "live_streams",
            "live_events",
            "live_modules",
            "primary_retains");

    CudaTestDouble dbl;
    CudaDriver driver;
    long[] liveBefore;

    @BeforeEach
    void openDouble() {
        String reason = CudaTestDouble.unavailableReason(DOUBLE_DIR);
        if (reason != null) {
            System.err.println("[stoke] SKIPPING GPU stage tests: " + reason);
        }
        assumeTrue(reason == null, reason);
        dbl = CudaTestDouble.open(DOUBLE_DIR);
        dbl.reset();
        driver = dbl.driver();
        liveBefore = live();
    }

    /** The double's live-object counts; compared before and after, so one failed test cannot fail the next. */
    long[] live() {
        return LIVE.stream().mapToLong(dbl::stat).toArray();
    }

    void assertNothingLeaked(String when) {
        long[] now = live();
        for (int i = 0; i < LIVE.size(); i++) {
            assertEquals(liveBefore[i], now[i], LIVE.get(i) + " " + when);
        }
    }

    @AfterEach
    void nothingLeaks() {
        if (dbl == null) {
            return;
        }
        try {
            assertNothingLeaked("after the stage closed");
        } finally {
            dbl.reset();
        }
    }

    @Test
    void everyBatchArrivesInOrderWithItsLabelsFromPinnedMemory() throws Exception {
        dbl.copyDelayMicros(2_000);
        try (FakeSource src = new FakeSource(3, 4, H, W, 12, 3);
                DeviceStage stage = DeviceStage.builder(src.ring, src)
                        .driver(driver)
                        .inFlight(2)
                        .build();
                Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(4L * H * W * 3);
            for (long s = 0; s < 12; s++) {
                try (DeviceBatch b = stage.next()) {
                    assertNotNull(b, "batch " + s);
                    int n = src.sizeOf(s);
                    assertEquals(s, b.sequence());
                    assertEquals(n, b.size());
                    assertArrayEquals(new long[] {n, H, W, 3}, b.shape());
                    assertEquals(RingLayout.DTYPE_UINT8, b.dtype());
                    assertEquals((long) n * H * W * 3, b.byteSize());
                    assertEquals(s == 11, b.lastInEpoch());
                    for (int i = 0; i < n; i++) {
                        assertEquals(FakeSource.label(s, i), b.label(i));
                        assertEquals(s * 100 + i, b.index(i));
                    }
                    b.copyToHost(host);
                    assertArrayEquals(
                            src.expected(s), host.asSlice(0, b.byteSize()).toArray(JAVA_BYTE), "pixels of " + s);
                }
            }
            assertNull(stage.next());
            assertNull(stage.next(), "the end stays the end");
            DeviceStageStats st = stage.stats();
            assertEquals(12, st.batches());
            assertEquals(11L * 4 * H * W * 3 + 3L * H * W * 3, st.bytesToDevice());
            assertTrue(st.maxOnDevice() <= 2, "at most K on the device: " + st.maxOnDevice());
            assertEquals(12, dbl.stat("async_copies"));
            assertEquals(0, dbl.stat("pageable_async_copies"), "the ring's slots are pinned");
            assertEquals(1, dbl.stat("registrations"), "pinned once, not per batch");
            assertEquals(0, dbl.stat("checksum_mismatches"));
            assertTrue(dbl.stat("max_inflight_copies") <= 2);
            assertTrue(src.errors.isEmpty(), src.errors.toString());
        }
    }

    @Test
    void hostSlotGoesBackWhenItsCopyCompletesNotWhenTheConsumerCloses() throws Exception {
        // Slow copies, a producer that overwrites a slot the instant it is back, a consumer that
        // holds every device batch: the slot must come back while the consumer still holds the
        // batch, and never before its copy has completed.
        dbl.copyDelayMicros(20_000);
        int total = 8;
        try (FakeSource src = new FakeSource(2, 4, H, W, total, 4)) {
            List<String> violations = new CopyOnWriteArrayList<>();
            src.onRelease = s -> {
                long completed = dbl.stat("completed_async_copies");
                if (completed < s + 1) {
                    violations.add("slot of batch " + s + " returned after only " + completed + " copies completed");
                }
            };
            try (DeviceStage stage = DeviceStage.builder(src.ring, src)
                    .driver(driver)
                    .inFlight(3)
                    .build()) {
                for (int s = 0; s < total; s++) {
                    DeviceBatch b = stage.next();
                    // Hold it well past its copy: the slot must come back on its own meanwhile.
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                    while (src.released.get() < s + 1 && System.nanoTime() < deadline) {
                        Thread.sleep(1);
                    }
                    // (Later batches' slots may be back too: the stage copies ahead.)
                    assertTrue(
                            src.released.get() >= s + 1,
                            "slot of batch " + s + " returned while the consumer holds it");
                    assertTrue(b.isReady());
                    b.close();
                }
                assertNull(stage.next());
            }
            assertTrue(violations.isEmpty(), violations.toString());
            assertEquals(total, src.released.get());
            assertEquals(0, dbl.stat("checksum_mismatches"), "a slot was refilled before its copy completed");
        }
    }

    @Test
    void normalisingOnTheDeviceGivesTheCpuReferenceBitForBit() throws Exception {
        float[] mean = TransformSpec.IMAGENET_MEAN;
        float[] std = TransformSpec.IMAGENET_STD;
        try (FakeSource src = new FakeSource(3, 4, H, W, 5, 2);
                DeviceStage stage = DeviceStage.builder(src.ring, src)
                        .driver(driver)
                        .inFlight(2)
                        .normalize(mean, std)
                        .build();
                Arena arena = Arena.ofConfined()) {
            assertTrue(stage.normalizes());
            MemorySegment got = arena.allocate(4L * 4 * H * W * 3);
            MemorySegment want = arena.allocate(4L * 4 * H * W * 3);
            for (long s = 0; s < 5; s++) {
                try (DeviceBatch b = stage.next()) {
                    int n = src.sizeOf(s);
                    assertArrayEquals(new long[] {n, 3, H, W}, b.shape());
                    assertEquals(RingLayout.DTYPE_FLOAT32, b.dtype());
                    assertEquals(4L * n * 3 * H * W, b.byteSize());
                    b.copyToHost(got);
                    NormalizeReference.normalize(MemorySegment.ofArray(src.expected(s)), want, n, H, W, mean, std);
                    for (long i = 0; i < (long) n * 3 * H * W; i++) {
                        int g = Float.floatToRawIntBits(got.getAtIndex(JAVA_FLOAT, i));
                        int w = Float.floatToRawIntBits(want.getAtIndex(JAVA_FLOAT, i));
                        if (g != w) {
                            throw new AssertionError("batch " + s + " value " + i + ": device "
                                    + Float.intBitsToFloat(g) + ", reference " + Float.intBitsToFloat(w));
                        }
                    }
                }
            }
            assertNull(stage.next());
            // uint8 crossed the bus, float32 was produced on the device.
            assertEquals(4L * 4 * H * W * 3 + 2L * H * W * 3, dbl.stat("bytes_async"));
            assertEquals(5, dbl.stat("kernels"));
        }
    }

    @Test
    void normalisingNeedsUint8Batches() throws Exception {
        var g = new RingGeometry(2, 2, RingLayout.DTYPE_FLOAT32, RingLayout.LAYOUT_CHW, 3, H, W);
        try (SlotRing ring = SlotRing.allocate(g)) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> DeviceStage.builder(ring, () -> null)
                            .driver(driver)
                            .normalize(TransformSpec.IMAGENET_MEAN, TransformSpec.IMAGENET_STD)
                            .build());
            assertTrue(e.getMessage().contains("uint8"), e.getMessage());
        }
    }

    @Test
    void atMostKBatchesOnTheDevice() throws Exception {
        try (FakeSource src = new FakeSource(4, 2, H, W, 6, 2);
                DeviceStage stage = DeviceStage.builder(src.ring, src)
                        .driver(driver)
                        .inFlight(2)
                        .build()) {
            DeviceBatch a = stage.next();
            DeviceBatch b = stage.next();
            CompletableFuture<DeviceBatch> third = CompletableFuture.supplyAsync(stage::next);
            assertThrows(
                    TimeoutException.class,
                    () -> third.get(300, TimeUnit.MILLISECONDS),
                    "a third batch while K = 2 are held");
            assertEquals(2, dbl.stat("async_copies"), "no copy was queued without a free device buffer");
            a.close();
            DeviceBatch c = third.get(5, TimeUnit.SECONDS);
            assertEquals(2, c.sequence());
            assertTrue(b.pointer() != c.pointer());
            b.close();
            c.close();
            for (DeviceBatch d; (d = stage.next()) != null; ) {
                d.close();
            }
            assertEquals(2, stage.stats().maxOnDevice());
            assertTrue(dbl.stat("max_inflight_copies") <= 2);
        }
    }

    @Test
    void copiesOverlapTheConsumersWork() throws Exception {
        // 10 batches, 15 ms to copy each, 15 ms of consumer work each: the last 9 take 270 ms or more in series,
        // about 150 ms with the copies running ahead. Asserted below 250 ms, a wide margin for a busy machine.
        dbl.copyDelayMicros(15_000);
        int total = 10;
        try (FakeSource src = new FakeSource(4, 2, H, W, total, 2);
                DeviceStage stage = DeviceStage.builder(src.ring, src)
                        .driver(driver)
                        .inFlight(3)
                        .build()) {
            DeviceBatch first = stage.next();
            long issued = System.nanoTime();
            assertFalse(first.isReady(), "next() hands the batch out while its copy is still running");
            first.synchronize();
            assertTrue(System.nanoTime() - issued >= TimeUnit.MILLISECONDS.toNanos(5));
            first.close();
            long start = System.nanoTime();
            for (int s = 1; s < total; s++) {
                try (DeviceBatch b = stage.next()) {
                    b.synchronize();
                    Thread.sleep(15); // the "training step"
                }
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ms < 250, "9 batches took " + ms + " ms: copies did not overlap the consumer");
        }
    }

    @Test
    void closeAfterMakesTheNextCopyIntoThatBufferWaitForTheConsumersStream() throws Exception {
        try (FakeSource src = new FakeSource(3, 2, H, W, 3, 2);
                DeviceStage stage = DeviceStage.builder(src.ring, src)
                        .driver(driver)
                        .inFlight(1)
                        .build()) {
            CudaContext ctx = stage.context();
            ctx.makeCurrent();
            try (CudaStream consumer = CudaStream.create(driver);
                    DeviceKernels kernels = new DeviceKernels(driver)) {
                DeviceBatch a = stage.next();
                a.waitOn(consumer);
                kernels.spin(200_000_000L, consumer); // the consumer's 200 ms "step" reading batch a
                long t0 = System.nanoTime();
                a.closeAfter(consumer);
                DeviceBatch b = stage.next(); // may be handed out at once ...
                b.synchronize(); // ... but its copy waits for the consumer's stream
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(ms >= 150, "the copy into a's buffer ran after only " + ms + " ms");
                b.close();
            }
        }
    }

    @Test
    void aFailedCopyNamesTheCallAndReturnsTheSlot() throws Exception {
        try (FakeSource src = new FakeSource(3, 2, H, W, 6, 2)) {
            // Before build: the copier starts copying ahead at once.
            dbl.failCall("cuMemcpyHtoDAsync_v2", 3, CudaDriver.CUDA_ERROR_LAUNCH_FAILED);
            DeviceStage stage = DeviceStage.builder(src.ring, src)
                    .driver(driver)
                    .inFlight(2)
                    .build();
            stage.next().close();
            stage.next().close();
            IllegalStateException e = assertThrows(IllegalStateException.class, stage::next);
            CudaException cause = assertInstanceOf(CudaException.class, e.getCause());
            assertEquals("cuMemcpyHtoDAsync_v2", cause.call());
            assertEquals("CUDA_ERROR_LAUNCH_FAILED", cause.errorName());
            assertTrue(e.getMessage().contains("cuMemcpyHtoDAsync_v2"), e.getMessage());
            assertThrows(IllegalStateException.class, stage::next, "a failed stage stays failed");
            stage.close();
            assertEquals(3, src.released.get(), "two delivered batches and the failed one gave their slots back");
        }
    }

    @Test
    void aFailedEventWaitSurfacesToTheConsumer() throws Exception {
        try (FakeSource src = new FakeSource(3, 2, H, W, 6, 2)) {
            dbl.failCall("cuEventSynchronize", 1, CudaDriver.CUDA_ERROR_LAUNCH_FAILED);
            DeviceStage stage = DeviceStage.builder(src.ring, src)
                    .driver(driver)
                    .inFlight(2)
                    .build();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                for (int i = 0; i < 6; i++) {
                    DeviceBatch b = stage.next();
                    if (b != null) {
                        b.close();
                    }
                }
            });
            assertEquals(
                    "cuEventSynchronize",
                    assertInstanceOf(CudaException.class, e.getCause()).call());
            stage.close();
        }
    }

    @Test
    void aFailedBuildFreesWhatItHadTaken() throws Exception {
        try (FakeSource src = new FakeSource(2, 2, H, W, 1, 2)) {
            for (String call : List.of(
                    "cuMemHostRegister_v2", "cuStreamCreate", "cuModuleLoadData", "cuMemAlloc_v2", "cuEventCreate")) {
                dbl.failCall(
                        call,
                        call.equals("cuMemAlloc_v2") || call.equals("cuEventCreate") ? 3 : 1,
                        CudaDriver.CUDA_ERROR_OUT_OF_MEMORY);
                CudaException e = assertThrows(
                        CudaException.class,
                        () -> DeviceStage.builder(src.ring, src)
                                .driver(driver)
                                .inFlight(2)
                                .normalize(TransformSpec.IMAGENET_MEAN, TransformSpec.IMAGENET_STD)
                                .build());
                assertEquals(call, e.call());
                assertNothingLeaked("after " + call + " failed");
            }
        }
    }

    @Test
    void aDriverWithoutDevicesIsUnavailableToo() throws Exception {
        dbl.deviceCount(0);
        try (FakeSource src = new FakeSource(2, 2, H, W, 1, 2)) {
            DeviceUnavailableException e = assertThrows(
                    DeviceUnavailableException.class,
                    () -> DeviceStage.builder(src.ring, src).driver(driver).build());
            assertTrue(e.getMessage().contains("has 0"), e.getMessage());
        }
    }

    @Test
    void loaderFailuresPassThroughAndTheStageGoesOn() throws Exception {
        try (FakeSource src = new FakeSource(3, 2, H, W, 3, 2)) {
            AtomicBoolean thrown = new AtomicBoolean();
            Supplier<Batch> flaky = () -> {
                if (thrown.compareAndSet(false, true)) {
                    throw new SampleException(0, 0, List.of());
                }
                return src.get();
            };
            try (DeviceStage stage = DeviceStage.builder(src.ring, flaky)
                    .driver(driver)
                    .inFlight(2)
                    .build()) {
                assertThrows(SampleException.class, stage::next);
                int n = 0;
                for (DeviceBatch b; (b = stage.next()) != null; n++) {
                    b.close();
                }
                assertEquals(3, n);
            }
        }
    }

    /** The loader's "nothing decoded" end reaches the consumer as itself, after the batches before it, every time. */
    @Test
    void nothingDecodedPassesThroughUnwrappedAfterTheBatchesBeforeIt() throws Exception {
        try (FakeSource src = new FakeSource(2, 2, H, W, 3, 2)) {
            AtomicInteger calls = new AtomicInteger();
            NoSampleDecodedException end = new NoSampleDecodedException(0, 4, List.of());
            Supplier<Batch> source = () -> {
                if (calls.incrementAndGet() > 2) {
                    throw end;
                }
                return src.get();
            };
            try (DeviceStage stage = DeviceStage.builder(src.ring, source)
                    .driver(driver)
                    .inFlight(2)
                    .build()) {
                for (int k = 0; k < 2; k++) {
                    try (DeviceBatch b = stage.next()) {
                        assertEquals(k, b.sequence());
                    }
                }
                Assertions.assertSame(end, assertThrows(NoSampleDecodedException.class, stage::next));
                Assertions.assertSame(end, assertThrows(NoSampleDecodedException.class, stage::next));
            }
        }
    }

    @Test
    void closingTheStageInvalidatesHeldBatchesAndReturnsEverySlot() throws Exception {
        dbl.copyDelayMicros(10_000);
        try (FakeSource src = new FakeSource(4, 2, H, W, 20, 2)) {
            DeviceStage stage = DeviceStage.builder(src.ring, src)
                    .driver(driver)
                    .inFlight(3)
                    .build();
            DeviceBatch held = stage.next();
            MemorySegment labels = held.labels();
            Thread.sleep(50);
            stage.close();
            stage.close(); // idempotent
            assertThrows(IllegalStateException.class, held::pointer);
            assertThrows(IllegalStateException.class, () -> labels.get(JAVA_INT, 0));
            held.close(); // harmless after the stage is gone
            assertThrows(IllegalStateException.class, stage::next);
            assertEquals(stage.stats().batches(), src.released.get(), "every slot taken went back");
            assertEquals(0, dbl.stat("checksum_mismatches"));
        }
    }
}
