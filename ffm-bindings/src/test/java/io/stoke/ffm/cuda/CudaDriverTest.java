package io.stoke.ffm.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.testing.CudaTestDouble;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The driver binding against the CUDA test double: this checks the symbol names and signatures
 * (the double is compiled against NVIDIA's cuda.h) and the wrappers' behaviour, not a GPU.
 */
class CudaDriverTest {
    static final Path DOUBLE_DIR = Path.of("target", "cuda-double");

    CudaTestDouble dbl;
    CudaDriver driver;

    @BeforeEach
    void openDouble() {
        String reason = CudaTestDouble.unavailableReason(DOUBLE_DIR);
        if (reason != null) {
            System.err.println("[stoke] SKIPPING CUDA driver tests: " + reason);
        }
        assumeTrue(reason == null, reason);
        dbl = CudaTestDouble.open(DOUBLE_DIR);
        dbl.reset();
        driver = dbl.driver();
    }

    @AfterEach
    void resetDouble() {
        if (dbl != null) {
            dbl.reset();
        }
    }

    @Test
    void propertyOverrideLoadsTheNamedLibrary() {
        String old = System.getProperty(CudaDriver.PATH_PROPERTY);
        System.setProperty(CudaDriver.PATH_PROPERTY, dbl.library().toString());
        try {
            CudaDriver.Availability a = CudaDriver.tryLoad();
            assertNull(a.reason());
            assertEquals(dbl.library().toString(), a.driver().orElseThrow().library());
        } finally {
            restore(old);
        }
    }

    private static void restore(String old) {
        if (old == null) {
            System.clearProperty(CudaDriver.PATH_PROPERTY);
        } else {
            System.setProperty(CudaDriver.PATH_PROPERTY, old);
        }
    }

    @Test
    void callsBeforeInitFailWithTheDriversError() {
        // A fresh double process-wide may already be initialised by another test; inject instead.
        dbl.failCall("cuInit", 1, CudaDriver.CUDA_ERROR_NO_DEVICE);
        CudaException e = assertThrows(CudaException.class, driver::init);
        assertEquals("cuInit", e.call());
        assertEquals(CudaDriver.CUDA_ERROR_NO_DEVICE, e.result());
        assertEquals("CUDA_ERROR_NO_DEVICE", e.errorName());
        assertTrue(e.getMessage().contains("no CUDA-capable device"), e.getMessage());
    }

    @Test
    void errorNamesAndStrings() {
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", driver.errorName(CudaDriver.CUDA_ERROR_OUT_OF_MEMORY));
        assertEquals("out of memory", driver.errorString(CudaDriver.CUDA_ERROR_OUT_OF_MEMORY));
        assertEquals("CUresult 123456", driver.errorName(123456));
    }

    @Test
    void deviceProperties() {
        driver.init();
        assertEquals(1, driver.deviceCount());
        CudaDevice d = driver.device(0);
        assertTrue(d.name().contains("test double"), d.name());
        assertEquals(1L << 30, d.totalMemory());
        assertEquals("0000:00:00.0", d.pciBusId());
        assertEquals(7, d.major());
        assertEquals(5, d.minor());
        assertEquals(13000, driver.driverVersion());
        dbl.deviceCount(0);
        assertEquals(0, driver.deviceCount());
        IllegalArgumentException none =
                assertThrows(IllegalArgumentException.class, () -> CudaContext.retainPrimary(driver, 0));
        assertTrue(none.getMessage().contains("has 0"), none.getMessage());
    }

    @Test
    void contextIsPerThreadAndReleased() throws Exception {
        long before = dbl.stat("primary_retains");
        try (CudaContext ctx = CudaContext.retainPrimary(driver, 0)) {
            assertEquals(before + 1, dbl.stat("primary_retains"));
            AtomicReference<Throwable> other = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    DeviceBuffer.allocate(driver, 16).close();
                } catch (Throwable e) {
                    other.set(e);
                }
            });
            t.start();
            t.join();
            // The new thread never made the context current: the driver (double) refuses, and we say so.
            CudaException e = (CudaException) other.get();
            assertEquals(CudaDriver.CUDA_ERROR_INVALID_CONTEXT, e.result());
            assertEquals("cuMemAlloc_v2", e.call());
            try (DeviceBuffer ok = DeviceBuffer.allocate(driver, 16)) {
                assertTrue(ok.pointer() != 0);
            }
            assertTrue(ctx.device().name().contains("double"));
        }
        assertEquals(before, dbl.stat("primary_retains"));
    }

    @Test
    void roundTripThroughDeviceMemory() {
        try (CudaContext _ = CudaContext.retainPrimary(driver, 0);
                Arena arena = Arena.ofConfined();
                DeviceBuffer dev = DeviceBuffer.allocate(driver, 4096)) {
            MemorySegment src = pattern(arena, 4096, 7);
            dev.copyFromHost(0, src);
            MemorySegment back = arena.allocate(1024);
            dev.copyToHost(back, 1000);
            assertArrayEquals(src.asSlice(1000, 1024).toArray(JAVA_BYTE), back.toArray(JAVA_BYTE));
            assertThrows(IndexOutOfBoundsException.class, () -> dev.copyFromHost(4000, src.asSlice(0, 97)));
            assertThrows(IndexOutOfBoundsException.class, () -> dev.copyToHost(arena.allocate(10), -1));
            assertEquals(0, dbl.stat("async_copies"));
        }
        assertEquals(0, dbl.stat("live_device_allocs"));
    }

    @Test
    void deviceToDeviceCopiesAreCheckedAndAllocationsHaveIpcHandles() {
        try (CudaContext _ = CudaContext.retainPrimary(driver, 0);
                Arena arena = Arena.ofConfined();
                DeviceBuffer src = DeviceBuffer.allocate(driver, 4096);
                DeviceBuffer dst = DeviceBuffer.allocate(driver, 8192);
                CudaStream stream = CudaStream.create(driver)) {
            MemorySegment pattern = pattern(arena, 4096, 11);
            src.copyFromHost(0, pattern);
            dst.copyFromDeviceAsync(100, src, 4096, stream);
            stream.synchronize();
            MemorySegment back = arena.allocate(4096);
            dst.copyToHost(back, 100);
            assertArrayEquals(pattern.toArray(JAVA_BYTE), back.toArray(JAVA_BYTE));
            assertEquals(1, dbl.stat("device_copies"));
            assertThrows(IndexOutOfBoundsException.class, () -> dst.copyFromDeviceAsync(4097, src, 4096, stream));
            assertThrows(IndexOutOfBoundsException.class, () -> dst.copyFromDeviceAsync(0, src, 4097, stream));
            byte[] a = src.ipcHandle();
            byte[] b = dst.ipcHandle();
            assertEquals(CudaDriver.IPC_HANDLE_SIZE, a.length);
            assertFalse(java.util.Arrays.equals(a, b), "each allocation has its own handle");
            // The driver's own check: a handle is for an allocation's base only.
            MemorySegment h = arena.allocate(CudaDriver.IPC_HANDLE_SIZE);
            assertEquals(1, driver.cuIpcGetMemHandle(h, src.pointer() + 64), "CUDA_ERROR_INVALID_VALUE");
            // As CUDA's: a process cannot open its own allocation's handle (another process does:
            // ServeGpuDecodeTest and the Python package's tests).
            h.copyFrom(MemorySegment.ofArray(a));
            MemorySegment opened = arena.allocate(8);
            assertEquals(
                    201, // CUDA_ERROR_INVALID_CONTEXT
                    driver.cuIpcOpenMemHandle_v2(opened, h, CudaDriver.IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        }
        assertEquals(0, dbl.stat("live_device_allocs"));
    }

    @Test
    void asyncCopiesCompleteInStreamOrderAndEventsSaySo() {
        try (CudaContext _ = CudaContext.retainPrimary(driver, 0);
                Arena arena = Arena.ofConfined();
                PinnedHostMemory host = PinnedHostMemory.allocate(driver, 1 << 16);
                DeviceBuffer dev = DeviceBuffer.allocate(driver, 1 << 16);
                CudaStream stream = CudaStream.create(driver);
                CudaEvent start = CudaEvent.createTimed(driver);
                CudaEvent first = CudaEvent.create(driver);
                CudaEvent end = CudaEvent.createTimed(driver)) {
            MemorySegment src = host.segment();
            src.copyFrom(pattern(arena, 1 << 16, 3));
            dbl.copyDelayMicros(100_000);
            start.record(stream);
            dev.copyFromHostAsync(0, src.asSlice(0, 1 << 15), stream);
            first.record(stream);
            dev.copyFromHostAsync(1 << 15, src.asSlice(1 << 15, 1 << 15), stream);
            end.record(stream);
            // Asynchronous: the call returned long before the 2 x 100 ms of copying.
            assertFalse(end.isComplete());
            first.synchronize();
            assertTrue(first.isComplete());
            assertFalse(end.isComplete(), "events complete in stream order, the second copy is still running");
            end.synchronize();
            float ms = end.elapsedMillis(start);
            assertTrue(ms >= 190, "two delayed copies took " + ms + " ms");
            MemorySegment back = arena.allocate(1 << 16);
            dev.copyToHost(back, 0);
            assertArrayEquals(src.toArray(JAVA_BYTE), back.toArray(JAVA_BYTE));
            assertEquals(2, dbl.stat("async_copies"));
            assertEquals(0, dbl.stat("pageable_async_copies"), "cuMemHostAlloc memory counts as pinned");
            assertEquals(0, dbl.stat("checksum_mismatches"));
            // Timing needs timed events: the driver says so and the message names the call.
            CudaException e = assertThrows(CudaException.class, () -> end.elapsedMillis(first));
            assertEquals("cuEventElapsedTime_v2", e.call());
        }
        assertEquals(0, dbl.stat("live_events"));
        assertEquals(0, dbl.stat("live_streams"));
    }

    @Test
    void registrationPinsExistingMemoryOnce() {
        try (CudaContext _ = CudaContext.retainPrimary(driver, 0);
                Arena arena = Arena.ofConfined();
                DeviceBuffer dev = DeviceBuffer.allocate(driver, 8192);
                CudaStream stream = CudaStream.create(driver)) {
            MemorySegment mem = arena.allocate(8192, 4096);
            dev.copyFromHostAsync(0, mem, stream);
            stream.synchronize();
            assertEquals(1, dbl.stat("pageable_async_copies"), "unregistered memory is pageable");
            try (HostRegistration reg = HostRegistration.register(driver, mem)) {
                assertTrue(reg.covers(mem.asSlice(4096, 4096)));
                assertFalse(reg.covers(arena.allocate(16)));
                CudaException twice = assertThrows(CudaException.class, () -> HostRegistration.register(driver, mem));
                assertEquals(CudaDriver.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, twice.result());
                dev.copyFromHostAsync(0, mem, stream);
                stream.synchronize();
                assertEquals(1, dbl.stat("pageable_async_copies"), "registered memory is pinned");
            }
            assertEquals(0, dbl.stat("live_pinned_ranges"));
        }
    }

    @Test
    void theDoubleDetectsAHostBufferChangedBeforeItsCopyCompleted() {
        // The stage's tests rely on this detector; show that it fires when the rule is broken.
        try (CudaContext _ = CudaContext.retainPrimary(driver, 0);
                Arena arena = Arena.ofConfined();
                DeviceBuffer dev = DeviceBuffer.allocate(driver, 4096);
                CudaStream stream = CudaStream.create(driver)) {
            MemorySegment src = pattern(arena, 4096, 1);
            dbl.copyDelayMicros(100_000);
            dev.copyFromHostAsync(0, src, stream);
            src.fill((byte) 0x55); // too early: the copy has not run yet
            stream.synchronize();
            assertEquals(1, dbl.stat("checksum_mismatches"));
        }
    }

    @Test
    void injectedFailuresBecomeExceptionsNamingTheCall() {
        try (CudaContext _ = CudaContext.retainPrimary(driver, 0)) {
            dbl.failCall("cuMemAlloc_v2", 2, CudaDriver.CUDA_ERROR_OUT_OF_MEMORY);
            try (DeviceBuffer first = DeviceBuffer.allocate(driver, 64)) {
                CudaException e = assertThrows(CudaException.class, () -> DeviceBuffer.allocate(driver, 64));
                assertEquals("cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", e.getMessage());
                assertTrue(first.pointer() != 0);
            }
        }
    }

    @Test
    void modulesComeFromPtxThatDeclaresTheKernel() {
        String ptx =
                ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry stoke_spin(\n.param .u64 p\n)\n{\nret;\n}\n";
        try (CudaContext _ = CudaContext.retainPrimary(driver, 0);
                CudaModule module = CudaModule.loadPtx(driver, ptx)) {
            assertFalse(module.function("stoke_spin").equals(MemorySegment.NULL));
            CudaException e =
                    assertThrows(CudaException.class, () -> module.function("stoke_normalize_u8_nhwc_to_f32_nchw"));
            assertEquals(CudaDriver.CUDA_ERROR_NOT_FOUND, e.result());
            CudaException bad = assertThrows(CudaException.class, () -> CudaModule.loadPtx(driver, "not ptx"));
            assertEquals("cuModuleLoadData", bad.call());
        }
        assertEquals(0, dbl.stat("live_modules"));
    }

    @Test
    void closedThingsThrowInsteadOfCrashing() {
        try (CudaContext _ = CudaContext.retainPrimary(driver, 0)) {
            DeviceBuffer dev = DeviceBuffer.allocate(driver, 64);
            dev.close();
            dev.close(); // idempotent
            assertThrows(IllegalStateException.class, dev::pointer);
            PinnedHostMemory host = PinnedHostMemory.allocate(driver, 64);
            MemorySegment seg = host.segment();
            host.close();
            assertThrows(IllegalStateException.class, () -> seg.get(JAVA_BYTE, 0));
            CudaEvent ev = CudaEvent.create(driver);
            ev.close();
            assertThrows(IllegalStateException.class, ev::isComplete);
            Arena arena = Arena.ofConfined();
            MemorySegment gone = arena.allocate(64);
            arena.close();
            try (DeviceBuffer d = DeviceBuffer.allocate(driver, 64)) {
                assertThrows(IllegalStateException.class, () -> d.copyFromHost(0, gone));
            }
        }
        assertEquals(0, dbl.stat("live_device_allocs"));
        assertEquals(0, dbl.stat("live_pinned_ranges"));
    }

    static MemorySegment pattern(Arena arena, int bytes, int seed) {
        MemorySegment s = arena.allocate(bytes, 4096);
        for (int i = 0; i < bytes; i++) {
            s.set(JAVA_BYTE, i, (byte) (i * 31 + seed * 7 + (i >>> 8)));
        }
        return s;
    }
}
