package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A C library of Stoke's own that the build put next to these classes ({@code native/pixels}):
 * copied out of the jar into this user's cache of them ({@link LibraryCache}:
 * {@code ~/.cache/stoke/native/<hash>/}, made once and reused) and opened once, its ABI version
 * checked. A system property names another file (the wheel's libraries, opened where they lie), or
 * {@code none} to turn it off. What cannot be had is a sentence, never an exception: callers fall
 * back and say so.
 *
 * <p>Where the library cache is refused (another user's folder, a link, a folder others can write) or cannot
 * be made (a read-only home), that is said once, and the library is opened from a private temporary
 * folder that is deleted as soon as it is open: nothing is left there by a {@code kill -9} after it.
 *
 * @param lookup      the library's symbols, or null
 * @param unavailable why there is no library, or null
 */
record BundledLibrary(SymbolLookup lookup, String unavailable) {
    private static final AtomicBoolean SAID_NO_CACHE = new AtomicBoolean();

    /**
     * @param human        the library in words, for messages
     * @param file         its file name beside this class ({@code native/FILE})
     * @param notBuilt     the file the build writes beside it with the reason it was not built
     * @param property     the system property that overrides the file
     * @param abiSymbol    a function of no arguments returning the library's ABI version
     * @param abiVersion   the version this code was written for
     */
    static BundledLibrary open(
            String human, String file, String notBuilt, String property, String abiSymbol, int abiVersion) {
        String override = System.getProperty(property);
        if ("none".equals(override)) {
            return missing(human, "turned off with -D" + property + "=none");
        }
        Path path;
        Path privateFolder = null;
        try {
            if (override != null && !override.isBlank()) {
                path = Path.of(override);
            } else {
                byte[] bytes = resource("native/" + file);
                if (bytes == null) {
                    return missing(human, whyNotBuilt("native/" + notBuilt, file));
                }
                try {
                    path = LibraryCache.forUser().file(file, bytes);
                } catch (IOException | RuntimeException e) {
                    if (SAID_NO_CACHE.compareAndSet(false, true)) {
                        System.err.println("stoke: WARNING: Stoke's native libraries are not cached (" + e.getMessage()
                                + "): each process copies them to a private temporary folder, deleted once they"
                                + " are open");
                    }
                    privateFolder = Files.createTempDirectory("stoke-native-"); // 0700
                    path = privateFolder.resolve(file);
                    Files.write(path, bytes, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                }
            }
        } catch (IOException | RuntimeException e) {
            if (privateFolder != null) {
                LibraryCache.deleteTree(privateFolder);
            }
            return missing(human, "cannot copy it out of the jar: " + e.getMessage());
        }
        try {
            SymbolLookup lib = SymbolLookup.libraryLookup(path, Arena.global());
            int abi = (int) Linker.nativeLinker()
                    .downcallHandle(lib.findOrThrow(abiSymbol), FunctionDescriptor.of(JAVA_INT))
                    .invokeExact();
            if (abi != abiVersion) {
                return missing(
                        human, path + " has ABI version " + abi + ", this Stoke needs " + abiVersion + " (rebuild)");
            }
            return new BundledLibrary(lib, null);
        } catch (Throwable t) {
            return missing(human, "cannot load " + path + ": " + t.getMessage());
        } finally {
            if (privateFolder != null) {
                LibraryCache.deleteTree(privateFolder); // the open library stays mapped
            }
        }
    }

    /**
     * The downcall of function {@code name}, or null where the library is not loaded: a binding's
     * calls check {@link #unavailable} first and say it.
     */
    MethodHandle downcall(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        return lookup == null
                ? null
                : Linker.nativeLinker().downcallHandle(lookup.findOrThrow(name), descriptor, options);
    }

    private static BundledLibrary missing(String human, String why) {
        return new BundledLibrary(null, human + " is not available: " + why);
    }

    /** The bytes of a resource beside this class, or null when the jar holds none. */
    private static byte[] resource(String resource) throws IOException {
        try (InputStream in = BundledLibrary.class.getResourceAsStream(resource)) {
            return in == null ? null : in.readAllBytes();
        }
    }

    private static String whyNotBuilt(String resource, String file) {
        try (InputStream in = BundledLibrary.class.getResourceAsStream(resource)) {
            String why = in == null ? null : new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
            return why != null && !why.isEmpty()
                    ? "the build did not make it: " + why.lines().findFirst().orElse(why)
                    : "this jar holds no " + file + " (built without native/pixels/build.sh)";
        } catch (IOException e) {
            return "this jar holds no " + file;
        }
    }
}
