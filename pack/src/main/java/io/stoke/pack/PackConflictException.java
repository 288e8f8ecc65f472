package io.stoke.pack;

/**
 * The output folder holds shards that this run would not continue: another source, other options,
 * or shards without a manifest. Nothing was touched; the message says what is there and that
 * {@code --overwrite} (or another folder) is the way on.
 */
public final class PackConflictException extends RuntimeException {
    public PackConflictException(String message) {
        super(message);
    }
}
