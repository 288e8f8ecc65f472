package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Stoke's own C library, {@code native/pixels} (its header says what each function does), 1:1.
 * The build compiles it into this module's classes folder, so the jar carries it; it is copied
 * to a temporary file and opened once per JVM. {@code -Dstoke.pixels.path=FILE} names another
 * file; {@code -Dstoke.pixels.path=none} turns it off.
 *
 * <p>The functions trust their arguments: callers check every extent first. Array arguments may
 * be heap segments ({@code MemorySegment.ofArray}): the calls are short and never block, so they
 * are linked as critical and read the arrays in place.
 */
public final class StokePixels {
    /** What the library must report from {@code stoke_pixels_abi_version}. */
    public static final int ABI_VERSION = 1;
    /** The system property that names the library's file, or {@code none}. */
    public static final String PATH_PROPERTY = "stoke.pixels.path";

    private static final String RESOURCE = "native/libstoke_pixels.so";
    private static final Loaded LOADED = load();

    private record Loaded(MethodHandle horizontal, MethodHandle vertical, String unavailable) {
    }

    private StokePixels() {
    }

    /** Whether the library is loaded; if not, {@link #unavailableReason()} says why. */
    public static boolean available() {
        return LOADED.unavailable == null;
    }

    /** Why the library is not loaded, in one sentence, or null. */
    public static String unavailableReason() {
        return LOADED.unavailable;
    }

    /** {@code stoke_resample_horizontal}. */
    public static void resampleHorizontal(MemorySegment src, long srcRowBytes, int yFirst, int rows, int outWidth,
                                          MemorySegment bounds, MemorySegment weights, int taps, MemorySegment tmp) {
        try {
            LOADED.horizontal.invokeExact(src, srcRowBytes, yFirst, rows, outWidth, bounds, weights, taps, tmp);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code stoke_resample_vertical_rgb}. */
    public static void resampleVerticalRgb(MemorySegment tmp, int width, int yFirst, int outRows, MemorySegment bounds,
                                           MemorySegment weights, int taps, MemorySegment acc, MemorySegment dst,
                                           long dstOffset) {
        try {
            LOADED.vertical.invokeExact(tmp, width, yFirst, outRows, bounds, weights, taps, acc, dst, dstOffset);
        } catch (Throwable t) {
            throw rethrow(t);
        }
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

    private static Loaded load() {
        String override = System.getProperty(PATH_PROPERTY);
        if ("none".equals(override)) {
            return unavailable("turned off with -D" + PATH_PROPERTY + "=none");
        }
        Path file;
        try {
            file = override != null && !override.isBlank() ? Path.of(override) : extract();
        } catch (IOException | UncheckedIOException e) {
            return unavailable("cannot copy it out of the jar: " + e.getMessage());
        }
        if (file == null) {
            return unavailable(whyNotBuilt());
        }
        try {
            SymbolLookup lib = SymbolLookup.libraryLookup(file, Arena.global());
            Linker linker = Linker.nativeLinker();
            int abi = (int) linker.downcallHandle(lib.findOrThrow("stoke_pixels_abi_version"),
                    FunctionDescriptor.of(JAVA_INT)).invokeExact();
            if (abi != ABI_VERSION) {
                return unavailable(file + " has ABI version " + abi + ", this Stoke needs " + ABI_VERSION + " (rebuild)");
            }
            Linker.Option critical = Linker.Option.critical(true);
            MethodHandle h = linker.downcallHandle(lib.findOrThrow("stoke_resample_horizontal"), FunctionDescriptor.ofVoid(
                    ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS), critical);
            MethodHandle v = linker.downcallHandle(lib.findOrThrow("stoke_resample_vertical_rgb"), FunctionDescriptor.ofVoid(
                    ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), critical);
            return new Loaded(h, v, null);
        } catch (Throwable t) {
            return unavailable("cannot load " + file + ": " + t.getMessage());
        }
    }

    private static Loaded unavailable(String why) {
        return new Loaded(null, null, "Stoke's native pixel library is not available: " + why);
    }

    /** Copies the library out of the jar into a temporary file (deleted at exit); null if the jar has none. */
    private static Path extract() throws IOException {
        try (InputStream in = StokePixels.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                return null;
            }
            Path file = Files.createTempFile("libstoke_pixels", ".so");
            file.toFile().deleteOnExit();
            Files.write(file, in.readAllBytes());
            return file;
        }
    }

    private static String whyNotBuilt() {
        try (InputStream in = StokePixels.class.getResourceAsStream("native/UNAVAILABLE")) {
            String why = in == null ? null : new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
            return why != null && !why.isEmpty() ? "the build did not make it: " + why.lines().findFirst().orElse(why)
                    : "this jar holds no libstoke_pixels.so (built without native/pixels/build.sh)";
        } catch (IOException e) {
            return "this jar holds no libstoke_pixels.so";
        }
    }
}
