package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The restart cache's content hash in Stoke's pixel library ({@code native/pixels/stoke_hash.h}
 * says what it computes), 1:1. It comes from the same file as {@link StokePixels}
 * ({@code -Dstoke.pixels.path} applies to both) under its own ABI version.
 *
 * <p>The function trusts its arguments: callers check the extent first. The segment may be a heap
 * segment; the call never blocks, so it is linked as critical and reads the array in place.
 */
public final class StokeHash {
    /** What the library must report from {@code stoke_hash_abi_version}. */
    public static final int ABI_VERSION = 2;

    private static final Loaded LOADED = load();

    private record Loaded(MethodHandle hash, String unavailable) {}

    private StokeHash() {}

    /** Whether the library is loaded; if not, {@link #unavailableReason()} says why. */
    public static boolean available() {
        return LOADED.unavailable == null;
    }

    /** Why the library is not loaded, in one sentence, or null. */
    public static String unavailableReason() {
        return LOADED.unavailable;
    }

    /** {@code stoke_hash}. */
    public static long hash(long seed, MemorySegment src, long offset, long length) {
        try {
            return (long) LOADED.hash.invokeExact(seed, src, offset, length);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    private static Loaded load() {
        BundledLibrary lib = BundledLibrary.open(
                "Stoke's native content hash",
                "libstoke_pixels.so",
                "UNAVAILABLE",
                StokePixels.PATH_PROPERTY,
                "stoke_hash_abi_version",
                ABI_VERSION);
        if (lib.unavailable() != null) {
            return new Loaded(null, lib.unavailable());
        }
        MethodHandle hash = Linker.nativeLinker()
                .downcallHandle(
                        lib.lookup().findOrThrow("stoke_hash"),
                        FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG),
                        Linker.Option.critical(true));
        return new Loaded(hash, null);
    }
}
