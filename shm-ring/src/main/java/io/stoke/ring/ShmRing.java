package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;

import io.stoke.ffm.LibC;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.EnumSet;
import java.util.function.Consumer;

/**
 * A {@link SlotRing} in a file (normally under {@code /dev/shm}) that a producer process and one
 * consumer process map at once. The file format is {@link RingLayout}, repeated for other languages
 * in {@code native/stoke_ring.h}; {@code docs/shared-memory.md} describes the protocol.
 *
 * <p>The producer {@link #create creates} the ring: it writes the whole file under a temporary
 * name with mode 0600 and renames it into place, so a consumer never sees half a header; it
 * refuses a path whose producer is still alive and replaces a file left by a dead one. A named
 * ring's file is opened only as {@link OwnedRingFile} allows, by both ends: a symbolic link, a file
 * of another user or one its group or others can write is refused ({@link RingOwnerException}),
 * since another user may have planted it in {@code /dev/shm}, which all can write. A monitor
 * thread writes the producer's heartbeat and reclaims the slots of a consumer that went away. A
 * consumer {@link #attach attaches}: it validates the header ({@link RingHeader}) before touching
 * anything else and claims the consumer seat by compare-and-swap.
 *
 * <p>Closing the producer's ring removes the file; closing a consumer's releases the seat (its
 * unreleased batches are delivered again to the next consumer). Either way the mapping is unmapped
 * through the ring's arena, so later accesses through its segments throw instead of crashing.
 */
public final class ShmRing implements AutoCloseable {
    private final Path path;
    private final SlotRing ring;
    private final RingState state;
    private final boolean producer;
    /** Whether closing removes the file: a producer's named ring, never an inherited descriptor. */
    private final boolean removeOnClose;

    private final long pid = ProcessHandle.current().pid();
    private final Thread monitor;
    private final Consumer<String> log;
    private volatile boolean closed;
    private volatile long reclaims;

    private ShmRing(Path path, SlotRing ring, boolean producer, boolean removeOnClose, Consumer<String> log) {
        this.path = path;
        this.ring = ring;
        this.state = ring.ringState();
        this.producer = producer;
        this.removeOnClose = removeOnClose;
        this.log = log;
        if (producer) {
            monitor =
                    Thread.ofPlatform().name("stoke-ring-monitor").daemon(true).unstarted(this::monitor);
            monitor.start();
        } else {
            monitor = null;
        }
    }

    /**
     * Creates the ring file at {@code path} for a producer, every slot free.
     *
     * <p>A named ring's pages are reserved when it is created ({@code posix_fallocate}): on a tmpfs
     * such as {@code /dev/shm} pages are otherwise allocated when first touched, and a worker that
     * touches one the file system cannot back gets SIGBUS, which aborts the JVM. Reserved, the ring
     * either does not fit now, which is a {@link RingSpaceException} before anything is written,
     * or it can never run out later, whoever fills the file system meanwhile.
     *
     * <p>A {@code path} that names an inherited descriptor ({@link InheritedDescriptor}; an
     * anonymous file that the parent process created) is laid out in place: it must be empty, it
     * is grown to the ring's size, and it is left to its descriptors' owners when closed. An
     * anonymous file from {@code memfd_create} lives in no mounted file system, so no {@code
     * /dev/shm} size bounds it (the memory counts against the processes' memory limit, as any).
     *
     * @param log where to report what happened to an old file or a consumer (null: nowhere)
     * @throws IllegalStateException when a live producer already serves {@code path}
     * @throws RingOwnerException when a file at {@code path} is a link, not a regular file, another
     *     user's, or writable by its group or others: it is refused, not replaced
     * @throws RingSpaceException when the ring does not fit in {@code path}'s file system
     */
    public static ShmRing create(Path path, RingGeometry geometry, Consumer<String> log) {
        Consumer<String> out = log != null ? log : s -> {};
        if (InheritedDescriptor.names(path)) {
            return createInDescriptor(path, geometry, out);
        }
        long self = ProcessHandle.current().pid();
        replaceStale(path, out);
        removeUnfinished(path, self, out);
        checkSpace(path, geometry.totalLength());
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp-" + self);
        Arena arena = Arena.ofShared();
        try {
            Files.deleteIfExists(tmp);
            MemorySegment memory;
            try (FileChannel ch = FileChannel.open(
                    tmp,
                    EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
                reserve(tmp, path, geometry.totalLength());
                memory = ch.map(FileChannel.MapMode.READ_WRITE, 0, geometry.totalLength(), arena);
            }
            SlotRing ring = SlotRing.over(geometry, arena, memory, true);
            ring.ringState().producerPid(self);
            ring.ringState().producerHeartbeat(System.currentTimeMillis());
            try {
                Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IllegalStateException("cannot rename " + tmp + " to " + path + " atomically", e);
            }
            return new ShmRing(path, ring, true, true, out);
        } catch (IOException e) {
            arena.close();
            deleteQuietly(tmp);
            throw new UncheckedIOException("cannot create ring " + path + ": " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            if (arena.scope().isAlive()) {
                arena.close();
            }
            deleteQuietly(tmp);
            throw e;
        }
    }

    /** The ring in an inherited, empty anonymous file: grown, mapped and written in place (magic last). */
    private static ShmRing createInDescriptor(Path path, RingGeometry geometry, Consumer<String> log) {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment memory;
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                if (ch.size() != 0) {
                    throw new IllegalArgumentException(path + " holds " + ch.size()
                            + " bytes: a ring is laid out only in an empty file passed as a descriptor");
                }
                if (isAnonymous(path)) {
                    // No file system size to run out of: pages come as the workers first touch them.
                    ch.write(ByteBuffer.wrap(new byte[1]), geometry.totalLength() - 1);
                } else {
                    checkSpace(path, geometry.totalLength());
                    reserve(path, path, geometry.totalLength());
                }
                memory = ch.map(FileChannel.MapMode.READ_WRITE, 0, geometry.totalLength(), arena);
            }
            SlotRing ring = SlotRing.over(geometry, arena, memory, true);
            ring.ringState().producerPid(ProcessHandle.current().pid());
            ring.ringState().producerHeartbeat(System.currentTimeMillis());
            return new ShmRing(path, ring, true, false, log);
        } catch (NoSuchFileException e) {
            arena.close();
            throw new IllegalArgumentException(path + ": no such descriptor was passed to this process", e);
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot create ring " + path + ": " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** An anonymous file ({@code memfd_create}), which lives in no mounted file system. */
    private static boolean isAnonymous(Path descriptor) {
        try {
            return Files.readSymbolicLink(descriptor).toString().startsWith("/memfd:");
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    /** Throws {@link RingSpaceException} when {@code bytes} more do not fit beside {@code ring}. */
    private static void checkSpace(Path ring, long bytes) {
        long free = usableSpace(ring);
        if (free >= 0 && bytes > free) {
            throw new RingSpaceException(ring, bytes, free);
        }
    }

    private static long usableSpace(Path ring) {
        try {
            // A descriptor's file system is its file's (statfs follows the link); a name's, its folder's.
            Path where = InheritedDescriptor.names(ring)
                    ? ring
                    : ring.toAbsolutePath().getParent();
            return Files.getFileStore(where).getUsableSpace();
        } catch (IOException e) {
            return -1; // no statfs here: posix_fallocate below still says whether it fits
        }
    }

    /** Reserves {@code file}'s first {@code bytes} (and sets its size), or says why it cannot. */
    private static void reserve(Path file, Path ring, long bytes) throws IOException {
        try (Arena call = Arena.ofConfined()) {
            MemorySegment state = LibC.allocateCallState(call);
            // The temporary file this process just made: never through a link planted in its place.
            int noFollow = InheritedDescriptor.names(file) ? 0 : LibC.O_NOFOLLOW;
            int fd = LibC.open(state, call.allocateFrom(file.toString()), LibC.O_RDWR | LibC.O_CLOEXEC | noFollow);
            if (fd < 0) {
                throw new IOException("open: " + LibC.strerror(LibC.errno(state)));
            }
            int error;
            try {
                error = LibC.posixFallocate(fd, 0, bytes);
            } finally {
                LibC.close(fd);
            }
            if (error == LibC.ENOSPC) {
                throw new RingSpaceException(ring, bytes, Math.max(0, usableSpace(ring)));
            }
            if (error != 0) {
                throw new IOException(
                        "cannot reserve " + bytes + " bytes (posix_fallocate: " + LibC.strerror(error) + ")");
            }
        }
    }

    /**
     * Refuses a path whose producer is alive, or whose file another user could have planted
     * ({@link OwnedRingFile}); removes a file that a dead producer (or something else) left.
     */
    private static void replaceStale(Path path, Consumer<String> log) {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        long owner = 0;
        try (FileChannel ch = OwnedRingFile.open(path, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(HEADER_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            while (b.hasRemaining() && ch.read(b) > 0) {
                // read the header page
            }
            if (b.position() >= PRODUCER_PID_OFFSET + 8 && b.getLong(MAGIC_OFFSET) == MAGIC) {
                owner = b.getLong(PRODUCER_PID_OFFSET);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read existing " + path, e);
        }
        if (owner > 0 && owner != ProcessHandle.current().pid() && isAlive(owner)) {
            throw new IllegalStateException(
                    path + " is served by a live producer (pid " + owner + "); stop it or choose another --ring path");
        }
        log.accept("replacing " + path
                + (owner > 0 ? " left by producer pid " + owner + ", which is gone" : ", which is not a live ring"));
        deleteQuietly(path);
    }

    /**
     * Removes the unfinished files of this path that producers killed while creating it left
     * ({@code PATH.tmp-PID}, written before the rename into place: up to the ring's whole size, in
     * memory where the folder is {@code /dev/shm}), those whose process is gone. One whose pid is
     * alive, perhaps reused, is left: it may be a producer creating it now, and is refused there.
     */
    private static void removeUnfinished(Path path, long self, Consumer<String> log) {
        Path folder = path.toAbsolutePath().getParent();
        String prefix = path.getFileName() + ".tmp-";
        try (DirectoryStream<Path> found =
                Files.newDirectoryStream(folder, f -> f.getFileName().toString().startsWith(prefix))) {
            for (Path tmp : found) {
                String pid = tmp.getFileName().toString().substring(prefix.length());
                if (pid.isEmpty() || pid.length() > 18 || !pid.chars().allMatch(c -> c >= '0' && c <= '9')) {
                    continue;
                }
                long owner = Long.parseLong(pid);
                if (owner != self && !isAlive(owner) && Files.isRegularFile(tmp, LinkOption.NOFOLLOW_LINKS)) {
                    deleteQuietly(tmp);
                    log.accept(
                            "removed " + tmp + ", a ring left unfinished by producer pid " + owner + ", which is gone");
                }
            }
        } catch (IOException e) {
            // best effort: what is left is named PATH.tmp-PID beside the ring
        }
    }

    /**
     * Attaches to the ring at {@code path} as its consumer: maps it, validates the header, checks
     * that the producer is alive, and takes the consumer seat, waiting up to {@code timeout} for the
     * producer to reclaim the seat of a consumer that is gone.
     *
     * @throws RingFormatException when the file is not a valid ring
     * @throws RingOwnerException when a named ring is a link, not a regular file, another user's, or
     *     writable by its group or others
     * @throws ProducerGoneException when the producer is not running
     * @throws IllegalStateException when a live consumer holds the seat
     */
    public static ShmRing attach(Path path, Duration timeout) {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment memory;
            RingGeometry geometry;
            try (FileChannel ch = InheritedDescriptor.names(path)
                    ? FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)
                    : OwnedRingFile.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                long size = ch.size();
                if (size < HEADER_LENGTH) {
                    throw new RingFormatException(path + ": " + size + " bytes is too short for a ring header ("
                            + HEADER_LENGTH + " bytes); truncated or not a Stoke ring");
                }
                memory = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
                geometry = RingHeader.validate(memory, size, path.toString());
                RingState state = new RingState(memory);
                checkProducer(state, path);
                takeSeat(ch, state, path, timeout);
                state.consumerHeartbeat(System.currentTimeMillis());
            } catch (NoSuchFileException e) {
                throw new IllegalArgumentException("no ring at " + path + " (is `stoke serve` running?)", e);
            }
            return new ShmRing(path, SlotRing.over(geometry, arena, memory, false), false, false, null);
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot attach to ring " + path + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            arena.close();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while attaching to " + path, e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Takes the consumer seat: 0 -> our pid. Consumers take an fcntl write lock on the file's first
     * byte around it, so that a consumer without compare-and-swap (Python) is safe against another
     * one attaching at the same moment; the producer only ever moves the seat from a dead or
     * detached value to 0.
     */
    private static void takeSeat(FileChannel ch, RingState state, Path path, Duration timeout)
            throws IOException, InterruptedException {
        long self = ProcessHandle.current().pid();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long seat;
            try (var _ = ch.lock(0, 1, false)) {
                seat = state.consumerPid();
                if (seat == 0 && state.compareAndSetConsumerPid(0L, self)) {
                    return;
                }
            }
            if (seat > 0 && isAlive(seat)) {
                throw new IllegalStateException(path + " already has a consumer (pid " + seat + ")");
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(path + ": the producer has not reclaimed the seat of consumer "
                        + Math.abs(seat) + " within " + timeout.toMillis() + " ms");
            }
            checkProducer(state, path);
            Thread.sleep(5);
        }
    }

    /**
     * Throws when the producer failed or is gone: its state says failed, its process is not alive,
     * or its heartbeat is older than {@link RingLayout#PRODUCER_TIMEOUT_MILLIS}.
     */
    private static void checkProducer(RingState state, Path path) {
        if (state.producerFailed()) {
            throw new ProducerGoneException(path + ": the producer reported a failure (see its log)");
        }
        long producerPid = state.producerPid();
        if (!isAlive(producerPid)) {
            throw new ProducerGoneException(path + ": the producer (pid " + producerPid + ") is gone");
        }
        long age = System.currentTimeMillis() - state.producerHeartbeat();
        if (age > PRODUCER_TIMEOUT_MILLIS) {
            throw new ProducerGoneException(
                    path + ": the producer (pid " + producerPid + ") has not written its heartbeat for " + age + " ms");
        }
    }

    /** Consumer side: throws {@link ProducerGoneException} when the producer failed or is gone. */
    public void checkProducer() {
        checkProducer(state, path);
    }

    /** Consumer side: records that the consumer is alive and has taken one more batch when {@code took}. */
    public void consumerHeartbeat(boolean took) {
        state.consumerHeartbeat(System.currentTimeMillis());
        if (took) {
            state.addConsumed();
        }
    }

    /** Consumer side: it took a batch after waiting {@code waitNanos} for it (the producer's stall signal). */
    public void consumerTook(long waitNanos) {
        consumerHeartbeat(true);
        state.addConsumerWait(waitNanos);
    }

    /** Whether the producer has published its last batch ({@link RingLayout#STATE_END_OF_STREAM}). */
    public boolean endOfStream() {
        return state.endOfStream();
    }

    static boolean isAlive(long pid) {
        return pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** The producer's monitor: heartbeat, and reclaiming the slots of a consumer that left. */
    private void monitor() {
        try {
            while (!closed) {
                state.producerHeartbeat(System.currentTimeMillis());
                long seat = state.consumerPid();
                if (seat < 0 || (seat > 0 && !isAlive(seat))) {
                    int again = ring.reclaimFromConsumer();
                    reclaims++;
                    state.compareAndSetConsumerPid(seat, 0L);
                    log.accept("consumer pid " + Math.abs(seat) + (seat < 0 ? " detached" : " is gone") + "; " + again
                            + " batch(es) it held will be delivered again to the next consumer");
                }
                Thread.sleep(HEARTBEAT_INTERVAL_MILLIS);
            }
        } catch (InterruptedException | IllegalStateException e) {
            // closed under us (the ring's memory is gone): nothing left to watch
        }
    }

    public SlotRing slots() {
        return ring;
    }

    public RingGeometry geometry() {
        return ring.geometry();
    }

    public Path path() {
        return path;
    }

    /** The consumer's pid, 0 when none is attached (negative while a detach is being reclaimed). */
    public long consumerPid() {
        return state.consumerPid();
    }

    /** Batches taken by consumers so far (re-deliveries count again). */
    public long consumed() {
        return state.consumed();
    }

    /** Batches re-delivered because a consumer left without releasing them. */
    public long redelivered() {
        return state.redelivered();
    }

    /** Batches published (written by the producer's pipeline). */
    public long published() {
        return state.published();
    }

    /**
     * Producer: stops the monitor, removes the file (a named one) and unmaps it. Consumer: gives up the seat
     * (unreleased batches go to the next consumer) and unmaps. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (producer) {
            monitor.interrupt();
            try {
                monitor.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (removeOnClose) {
                deleteQuietly(path);
            }
        } else if (!ring.isClosed()) {
            long self = pid;
            state.compareAndSetConsumerPid(self, -self);
        }
        ring.close();
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            // best effort: a leftover file is replaced by the next producer
        }
    }
}
