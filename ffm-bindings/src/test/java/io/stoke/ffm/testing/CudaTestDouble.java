package io.stoke.ffm.testing;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.Nvjpeg;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The control side of the CUDA driver test double ({@code ffm-bindings/src/test/native/cuda-double/cuda_double.c}, built
 * by Maven into {@code target/cuda-double/}): failure injection, copy delays and statistics. For
 * tests on machines without a GPU. It lives in the test jar ({@code stoke-ffm-bindings:tests}), so no
 * shipped jar carries it.
 *
 * <p>The double checks the binding against NVIDIA's declarations and the GPU stage's logic
 * (ordering, slot hand-back, pool bounds, error propagation). It runs no GPU code.
 */
public final class CudaTestDouble {
    /** File name the build writes into its output folder. */
    public static final String FILE = "libcuda_double.so";

    private final Path library;
    private final MethodHandle reset;
    private final MethodHandle fail;
    private final MethodHandle copyDelay;
    private final MethodHandle verify;
    private final MethodHandle deviceCount;
    private final MethodHandle stat;
    // The nvJPEG double's controls, where it is linked in (null otherwise: see nvjpegUnavailableReason).
    private final MethodHandle nvjpegReset;
    private final MethodHandle nvjpegHardware;
    private final MethodHandle nvjpegHoldCreate;
    private final MethodHandle nvjpegStat;

    private CudaTestDouble(Path library) {
        this.library = library;
        SymbolLookup lib = SymbolLookup.libraryLookup(library, Arena.global());
        Linker linker = Linker.nativeLinker();
        reset = linker.downcallHandle(lib.findOrThrow("stoke_double_reset"), FunctionDescriptor.ofVoid());
        fail = linker.downcallHandle(
                lib.findOrThrow("stoke_double_fail"), FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT));
        copyDelay = linker.downcallHandle(
                lib.findOrThrow("stoke_double_set_copy_delay_us"), FunctionDescriptor.ofVoid(JAVA_LONG));
        verify = linker.downcallHandle(lib.findOrThrow("stoke_double_set_verify"), FunctionDescriptor.ofVoid(JAVA_INT));
        deviceCount = linker.downcallHandle(
                lib.findOrThrow("stoke_double_set_device_count"), FunctionDescriptor.ofVoid(JAVA_INT));
        stat = linker.downcallHandle(lib.findOrThrow("stoke_double_stat"), FunctionDescriptor.of(JAVA_LONG, ADDRESS));
        nvjpegReset = lib.find("stoke_nvjpeg_double_reset")
                .map(s -> linker.downcallHandle(s, FunctionDescriptor.ofVoid()))
                .orElse(null);
        nvjpegHardware = lib.find("stoke_nvjpeg_double_set_hardware")
                .map(s -> linker.downcallHandle(s, FunctionDescriptor.ofVoid(JAVA_INT)))
                .orElse(null);
        nvjpegHoldCreate = lib.find("stoke_nvjpeg_double_hold_create")
                .map(s -> linker.downcallHandle(s, FunctionDescriptor.ofVoid(JAVA_INT)))
                .orElse(null);
        nvjpegStat = lib.find("stoke_nvjpeg_double_stat")
                .map(s -> linker.downcallHandle(s, FunctionDescriptor.of(JAVA_LONG, ADDRESS)))
                .orElse(null);
    }

    /**
     * Why the nvJPEG double (nvjpeg_double.c, linked into the CUDA double where libjpeg's headers
     * were there to build it) cannot be used from {@code buildDir}, or null when it can.
     */
    public static String nvjpegUnavailableReason(Path buildDir) {
        String reason = unavailableReason(buildDir);
        if (reason != null) {
            return reason;
        }
        try {
            Path missing = buildDir.resolve("NVJPEG_UNAVAILABLE");
            if (Files.exists(missing)) {
                return "nvJPEG test double not built: "
                        + Files.readString(missing).strip();
            }
        } catch (IOException e) {
            return "nvJPEG test double: cannot read " + buildDir + ": " + e;
        }
        return null;
    }

    /** nvJPEG bound to the double (the same library file as {@link #driver()}). */
    public Nvjpeg nvjpeg() {
        requireNvjpeg();
        return Nvjpeg.load(library.toString());
    }

    /** Whether the modelled device has nvJPEG's hardware engine (default: it has not). */
    public void nvjpegHardware(boolean on) {
        requireNvjpeg();
        try {
            nvjpegHardware.invokeExact(on ? 1 : 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * While {@code on}, a successful {@code nvjpegCreateEx} waits (nvJPEG's own opening takes 0.6 s on
     * an H200); off, or {@link #reset}, lets it go.
     */
    public void nvjpegHoldCreate(boolean on) {
        requireNvjpeg();
        try {
            nvjpegHoldCreate.invokeExact(on ? 1 : 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * An nvJPEG double statistic: {@code nvjpeg_images}, {@code nvjpeg_batches}, {@code nvjpeg_pending},
     * {@code live_nvjpeg_handles}, {@code live_nvjpeg_states}, {@code live_nvjpeg_streams}.
     */
    public long nvjpegStat(String name) {
        requireNvjpeg();
        long v;
        try (Arena a = Arena.ofConfined()) {
            v = (long) nvjpegStat.invokeExact(a.allocateFrom(name));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (v < 0) {
            throw new IllegalArgumentException("no such statistic: " + name);
        }
        return v;
    }

    private void requireNvjpeg() {
        if (nvjpegStat == null) {
            throw new IllegalStateException(library + " was built without the nvJPEG double");
        }
    }

    /**
     * Why the double in {@code buildDir} cannot be used, or null when it can: the build's own
     * reason (no gcc, no cuda.h), or that the build never ran.
     */
    public static String unavailableReason(Path buildDir) {
        try {
            Path reason = buildDir.resolve("UNAVAILABLE");
            if (Files.exists(reason)) {
                return "CUDA test double not built: " + Files.readString(reason).strip();
            }
        } catch (IOException e) {
            return "CUDA test double: cannot read " + buildDir + ": " + e;
        }
        if (!Files.isRegularFile(buildDir.resolve(FILE))) {
            return "CUDA test double not found at " + buildDir.resolve(FILE)
                    + " (run the tests through Maven, whose generate-test-resources phase builds it)";
        }
        return null;
    }

    /** Opens the double built into {@code buildDir}; see {@link #unavailableReason}. */
    public static CudaTestDouble open(Path buildDir) {
        String reason = unavailableReason(buildDir);
        if (reason != null) {
            throw new IllegalStateException(reason);
        }
        return new CudaTestDouble(buildDir.resolve(FILE).toAbsolutePath());
    }

    /** The library's path, for {@link CudaDriver#load(String)} or {@code -Dstoke.cuda.path}. */
    public Path library() {
        return library;
    }

    /** A driver bound to the double. */
    public CudaDriver driver() {
        return CudaDriver.load(library.toString());
    }

    /** Clears statistics, delays and pending failures. */
    public void reset() {
        try {
            reset.invokeExact();
            if (nvjpegReset != null) {
                nvjpegReset.invokeExact();
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Makes the {@code nth} next call (1 = the very next) to driver symbol {@code symbol} return {@code result}. */
    public void failCall(String symbol, int nth, int result) {
        try (Arena a = Arena.ofConfined()) {
            fail.invokeExact(a.allocateFrom(symbol), nth, result);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Every host-to-device copy first sleeps this long, widening any race window. */
    public void copyDelayMicros(long micros) {
        try {
            copyDelay.invokeExact(micros);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether copies checksum their source at enqueue time and compare on arrival (default on). */
    public void verifyCopies(boolean on) {
        try {
            verify.invokeExact(on ? 1 : 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** What {@code cuDeviceGetCount} reports (default 1; 0 models a driver without a GPU). */
    public void deviceCount(int n) {
        try {
            deviceCount.invokeExact(n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * A statistic: {@code async_copies}, {@code pageable_async_copies}, {@code checksum_mismatches}, {@code completed_async_copies},
     * {@code sync_copies}, {@code bytes_async}, {@code kernels}, {@code max_inflight_copies},
     * {@code registrations}, {@code primary_retains}, {@code live_streams}, {@code live_events},
     * {@code live_modules}, {@code live_device_allocs}, {@code live_pinned_ranges}.
     */
    public long stat(String name) {
        long v;
        try (Arena a = Arena.ofConfined()) {
            v = (long) stat.invokeExact(a.allocateFrom(name));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (v < 0) {
            throw new IllegalArgumentException("no such statistic: " + name);
        }
        return v;
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
