package io.stoke.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/** Finds shared libraries and their symbols; turns "not installed" into one readable exception. */
public final class NativeLibraries {
    private NativeLibraries() {}

    /**
     * Opens a library for the life of the JVM. A system property, when set, names the file to use
     * instead (tests point it at a double); otherwise each soname is tried in turn.
     */
    public static SymbolLookup open(String humanName, String overrideProperty, String installHint, String... sonames) {
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

    public static MethodHandle downcall(
            SymbolLookup lookup, String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
        return Linker.nativeLinker().downcallHandle(lookup.findOrThrow(symbol), descriptor, options);
    }

    /**
     * What a binding throws for a {@code Throwable} a downcall's {@code invokeExact} gave: a missing
     * library as itself, a runtime exception or error as it is, anything else wrapped.
     */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof ExceptionInInitializerError e && e.getCause() instanceof NativeLibraryMissingException m) {
            return m;
        }
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
