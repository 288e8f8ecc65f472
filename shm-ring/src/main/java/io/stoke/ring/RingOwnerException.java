package io.stoke.ring;

/**
 * A named ring that another user could have planted or can write: a symbolic link, not a regular
 * file, owned by another user, or writable by its group or others. Both ends refuse it.
 */
public final class RingOwnerException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public RingOwnerException(String message) {
        super(message);
    }
}
