package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A C library of Stoke's own that the build put next to these classes ({@code native/pixels}):
 * copied out of the jar to a temporary file (deleted at exit) and opened once, its ABI version
 * checked. A system property names another file, or {@code none} to turn it off. What cannot be
 * had is a sentence, never an exception: callers fall back and say so.
 *
 * @param lookup      the library's symbols, or null
 * @param unavailable why there is no library, or null
 */
record BundledLibrary(SymbolLookup lookup, String unavailable) {
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
        try {
            path = override != null && !override.isBlank() ? Path.of(override) : extract("native/" + file);
        } catch (IOException | RuntimeException e) {
            return missing(human, "cannot copy it out of the jar: " + e.getMessage());
        }
        if (path == null) {
            return missing(human, whyNotBuilt("native/" + notBuilt, file));
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
        }
    }

    private static BundledLibrary missing(String human, String why) {
        return new BundledLibrary(null, human + " is not available: " + why);
    }

    private static Path extract(String resource) throws IOException {
        try (InputStream in = BundledLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                return null;
            }
            String name = resource.substring(resource.lastIndexOf('/') + 1);
            Path file = Files.createTempFile(name.replace(".so", "-"), ".so");
            file.toFile().deleteOnExit();
            Files.write(file, in.readAllBytes());
            return file;
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
