package io.stoke.loader.cache;

import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.internal.SafeFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.function.Consumer;

/**
 * The bytes a cache folder's entries hold, one count for every process filling the folder: a file
 * of one little-endian long, read and changed under an exclusive lock on it. The lock is fcntl's,
 * so it holds across processes; a JVM's file locks belong to the process, so the JVM's own threads
 * and caches take turns on one monitor first. Writers hold it while they file an entry, so the
 * count and the folder agree; readers never take it.
 *
 * <p>Where the folder's file system has no locks, the count is this process's alone: said once.
 *
 * <p>The file is made with {@code O_EXCL} and opened through {@code O_NOFOLLOW|O_NONBLOCK}, checked
 * regular: a link or a FIFO planted at its name is named, and the cache writes nothing more.
 */
final class FolderUsage {
    /** The count's file, in the cache folder (not an entry: the walk passes it over). */
    static final String NAME = ".stoke-cache-usage";

    private static final Object JVM = new Object();

    /** Files an entry under the lock; false when there was nothing to file (it exists already). */
    interface Filing {
        boolean file() throws IOException;
    }

    /** Counts the folder under the lock. */
    interface Walk {
        long total() throws IOException;
    }

    enum Outcome {
        FILED,
        NOTHING_TO_FILE,
        FULL
    }

    private final Path file;
    private final FolderAccess access;
    private final Consumer<String> say;
    private final ByteBuffer buffer = ByteBuffer.allocate(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    private boolean shared = true; // under JVM
    private long local; // under JVM: the count when the folder cannot be locked
    private volatile long last; // the count as last seen, for stats
    private volatile boolean held; // whether this process has held the count (read or changed it)
    // Under JVM: the count's file, opened at the first hold and kept until close(), so that filing
    // an entry costs a lock, a read and a write, not an open. Closing any descriptor of the file
    // drops every lock this process holds on it: closed only under JVM, where none is held.
    private FileChannel channel;
    private boolean closed;

    FolderUsage(Path dir, FolderAccess access, Consumer<String> say) {
        this.file = dir.resolve(NAME);
        this.access = access;
        this.say = say;
    }

    /**
     * The count as this process last saw it; before it has held the count (it has written nothing:
     * every read a hit, or the folder read-only), the count's file as it stands, read without the
     * lock as any reader of it; 0 where there is none or it cannot be read.
     */
    long last() {
        if (held) {
            return last;
        }
        try (FileChannel ch = SafeFiles.openRegular(file)) {
            ByteBuffer b = ByteBuffer.allocate(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
                // a short read goes on where it stopped
            }
            return b.position() == Long.BYTES ? b.getLong(0) : 0;
        } catch (IOException e) {
            return 0; // none yet, or not readable: the first hold says what fails
        }
    }

    /** Replaces the count with a walk of the folder, made while no process files an entry. */
    void recount(Walk walk) throws IOException {
        synchronized (JVM) {
            try (Held h = hold()) {
                h.set(walk.total());
            }
        }
    }

    /**
     * Files an entry of {@code bytes} bytes when the count leaves room for it under {@code budget};
     * the count grows by it when {@code filing} filed it.
     */
    Outcome add(long bytes, long budget, Filing filing) throws IOException {
        synchronized (JVM) {
            try (Held h = hold()) {
                long now = h.get();
                if (now + bytes > budget) {
                    return Outcome.FULL;
                }
                if (!filing.file()) {
                    return Outcome.NOTHING_TO_FILE;
                }
                h.set(now + bytes);
                return Outcome.FILED;
            }
        }
    }

    /** Removes an entry (a damaged one) and its bytes from the count; nothing when it is gone already. */
    void remove(Path entry) throws IOException {
        synchronized (JVM) {
            try (Held h = hold()) {
                long size;
                try {
                    // A link or a FIFO at the name counts nothing; removing it removes the name alone.
                    BasicFileAttributes found = java.nio.file.Files.readAttributes(
                            entry, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                    size = found.isRegularFile() ? found.size() : 0;
                    java.nio.file.Files.delete(entry);
                } catch (java.nio.file.NoSuchFileException gone) {
                    return; // another process removed or replaced it
                }
                h.set(Math.max(0, h.get() - size));
            }
        }
    }

    /** The file locked (or, where it cannot be, this process's count), under the JVM's monitor. */
    private Held hold() throws IOException {
        if (shared) {
            if (channel == null) {
                // Opening is the folder's own failure (the filler says so and stops writing); locking
                // is the file system's (NFS without a lock daemon, some FUSE mounts): counted here alone.
                try {
                    SafeFiles.createNew(file, access).close();
                } catch (FileAlreadyExistsException made) {
                    // By an earlier process, or another one now: opened below, where it is a regular file.
                }
                channel = SafeFiles.openRegularToChange(file);
            }
            try {
                return new Held(channel, channel.lock());
            } catch (IOException | UnsupportedOperationException e) {
                channel.close();
                channel = null;
                shared = false;
                say.accept("WARNING: the restart cache cannot lock " + file + " (" + e.getMessage()
                        + "): its budget is counted by this process alone, and processes filling the folder"
                        + " at once may together pass it");
            }
        }
        return new Held(null, null);
    }

    /** Closes the count's file; a later hold opens it for that hold alone. */
    void close() throws IOException {
        synchronized (JVM) {
            closed = true;
            if (channel != null) {
                channel.close();
                channel = null;
            }
        }
    }

    /** The count while held: the file's, or this process's. */
    private final class Held implements AutoCloseable {
        private final FileChannel ch;
        private final FileLock lock;

        Held(FileChannel ch, FileLock lock) {
            this.ch = ch;
            this.lock = lock;
        }

        long get() throws IOException {
            if (ch == null) {
                held = true; // last is local already: set() writes both
                return local;
            }
            buffer.clear();
            while (buffer.hasRemaining() && ch.read(buffer, buffer.position()) > 0) {
                // a short read goes on where it stopped
            }
            // An empty or short file (new, or cut short): 0, until the next walk counts the folder.
            long v = buffer.position() == Long.BYTES ? buffer.getLong(0) : 0;
            last = v;
            held = true; // after last: a reader that sees held sees the count
            return v;
        }

        void set(long v) throws IOException {
            last = v;
            held = true; // after last, as in get()
            if (ch == null) {
                local = v;
                return;
            }
            buffer.clear();
            buffer.putLong(0, v);
            while (buffer.hasRemaining()) {
                ch.write(buffer, buffer.position());
            }
        }

        @Override
        public void close() throws IOException {
            if (ch != null) {
                try {
                    lock.release();
                } finally {
                    if (closed) {
                        ch.close();
                        channel = null;
                    }
                }
            }
        }
    }
}
