package io.stoke.ring;

import java.nio.file.Path;

/**
 * A named ring does not fit in the file system that would hold it (a container's 64 MB {@code
 * /dev/shm}, say): thrown before anything is written, with the bytes it needs and the bytes free.
 */
public final class RingSpaceException extends IllegalStateException {
    private final transient Path ring;
    private final long needed;
    private final long free;

    public RingSpaceException(Path ring, long needed, long free) {
        super("the ring " + ring + " needs " + needed + " bytes and its file system ("
                + (InheritedDescriptor.names(ring)
                        ? ring
                        : ring.toAbsolutePath().getParent()) + ") has " + free
                + " bytes free");
        this.ring = ring;
        this.needed = needed;
        this.free = free;
    }

    public Path ring() {
        return ring;
    }

    /** The ring's size in bytes. */
    public long needed() {
        return needed;
    }

    /** The bytes free in the ring's file system when it was to be created. */
    public long free() {
        return free;
    }
}
