package io.stoke.cli;

import io.stoke.loader.error.ErrorPolicy;

/**
 * The values of the options that take one of a few words, spelled as on the command line: picocli
 * converts them (in any case, see {@link Main}), lists them in the help and names them in its
 * error, and each maps to the loader's own value.
 */
final class Choices {
    private Choices() {}

    /** {@code stoke embed --format}. */
    enum EmbedFormat {
        npy,
        parquet
    }

    /** {@code --on-error}. */
    enum OnError {
        fail(ErrorPolicy.FAIL),
        skip(ErrorPolicy.SKIP);

        final ErrorPolicy value;

        OnError(ErrorPolicy value) {
            this.value = value;
        }
    }

    /** {@code stoke pack --format}. */
    enum PackFormat {
        jpeg,
        png,
        raw
    }
}
