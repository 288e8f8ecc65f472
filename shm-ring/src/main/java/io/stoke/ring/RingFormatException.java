package io.stoke.ring;

/** A ring file that is not a ring this code can read: truncated, foreign, a different version, or inconsistent. */
public final class RingFormatException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RingFormatException(String message) {
        super(message);
    }
}
