package io.stoke.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/** Finds shared libraries and their symbols; turns "not installed" into one readable exception. */
final class NativeLibraries {
    private NativeLibraries() {}

    /**
     * Opens a library for the life of the JVM. A system property, when set, names the file to use
     * instead (tests point it at a double); otherwise each soname is tried in turn.
     */
    static SymbolLookup open(String humanName, String overrideProperty, String installHint, String... sonames) {
        String override = System.getProperty(overrideProperty);
        String[] candidates = override != null && !override.isBlank() ? new String[] {override} : sonames;
        IllegalArgumentException last = null;
        for (String name : candidates) {
            try {
                return SymbolLookup.libraryLookup(name, Arena.global());
            } catch (IllegalArgumentException e) {
                last = e;
            }
        }
        throw new NativeLibraryMissingException(
                humanName,
                String.join(", ", candidates) + (override != null ? " (from -D" + overrideProperty + ")" : ""),
                installHint,
                last);
    }

    static MethodHandle downcall(
            SymbolLookup lookup, String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
        return Linker.nativeLinker().downcallHandle(lookup.findOrThrow(symbol), descriptor, options);
    }
}
