package io.stoke.ffm;

/**
 * Thrown when a shared library that Stoke binds to is not installed. The message says which
 * library was looked for, where, and the exact command that installs it.
 */
public final class NativeLibraryMissingException extends RuntimeException {
    private final String library;

    public NativeLibraryMissingException(String library, String lookedFor, String installHint, Throwable cause) {
        super(library + " was not found (looked for " + lookedFor + "). " + installHint, cause);
        this.library = library;
    }

    /** The human name of the missing library, such as {@code libturbojpeg}. */
    public String library() {
        return library;
    }
}
