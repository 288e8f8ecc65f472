package io.stoke.serve;

import io.stoke.ffm.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * An anonymous file in memory ({@code memfd_create}), named by its descriptor, {@code /proc/self/fd/N}:
 * what {@code stoke.DataLoader} hands its producer for the ring and the side files, made here for a
 * server run in this process (the AOT cache's training run serves into one as the Python package
 * does). No {@code /dev/shm} size limit applies; it lives while a descriptor on it is open.
 */
public final class AnonymousFile implements AutoCloseable {
    private final int fd;

    private AnonymousFile(int fd) {
        this.fd = fd;
    }

    /** A new empty anonymous file; {@code name} shows in {@code /proc/PID/fd}. */
    public static AnonymousFile create(String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = LibC.allocateCallState(arena);
            int fd = LibC.memfdCreate(state, arena.allocateFrom(name), LibC.MFD_CLOEXEC);
            if (fd < 0) {
                throw new IllegalStateException(
                        "cannot create the anonymous file " + name + ": " + LibC.strerror(LibC.errno(state)));
            }
            return new AnonymousFile(fd);
        }
    }

    /** The path that names it in this process, {@code /proc/self/fd/N}. */
    public Path path() {
        return Path.of("/proc/self/fd/" + fd);
    }

    @Override
    public void close() {
        LibC.close(fd);
    }
}
