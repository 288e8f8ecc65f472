package io.stoke.pack;

import io.stoke.loader.internal.SafeFiles;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * One WebDataset shard being written: a tar of consecutive members per sample, written to
 * {@code NAME.tmp} and renamed to {@code NAME} by {@link #commit()}, so a shard under its final
 * name is always whole.
 *
 * <p>The tar is deterministic, so the same samples give the same bytes on every run and machine:
 * every member has mtime 0, uid and gid 0, empty user and group names and mode 0644; names of 100
 * bytes or more go in a PAX header (Commons Compress's {@code LONGFILE_POSIX}, whose header entry
 * inherits those fields), as do numbers too big for the plain header ({@code BIGNUMBER_POSIX}).
 * The records are 512 bytes and the archive is not padded past its two end records.
 *
 * <p>{@link #memberBytes} says in advance what a member will take, so that a sample that would
 * take the shard past its limit goes to the next shard instead; every member written is checked
 * against it.
 */
public final class ShardWriter implements AutoCloseable {
    /** Tar's record. */
    static final int RECORD = 512;
    /** What {@link TarArchiveOutputStream#finish()} adds: two zero records (the block is one record). */
    public static final long END_BYTES = 2 * RECORD;

    private static final int NAME_LIMIT = 100; // names of this many bytes or more need a PAX header
    private static final FileTime EPOCH = FileTime.fromMillis(0);

    private final Path target;
    private final Path tmp;
    private final FileChannel channel;
    private final BufferedOutputStream buffered;
    private final TarArchiveOutputStream tar;
    private int samples;
    private boolean done;

    private ShardWriter(Path target) throws IOException {
        this.target = target;
        // O_EXCL under a random name, never truncating: a link planted where the shard is written
        // is never followed (a crashed run's file is removed by the next run, or --overwrite).
        this.tmp = SafeFiles.temporaryFor(target);
        this.channel = SafeFiles.createNew(tmp);
        this.buffered = new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 20);
        this.tar = new TarArchiveOutputStream(buffered, RECORD, StandardCharsets.UTF_8.name());
        tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
    }

    /** Starts writing {@code target}, as a temporary file beside it ({@link SafeFiles#temporaryFor}). */
    public static ShardWriter create(Path target) {
        try {
            return new ShardWriter(target);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary file for " + target + ": " + e.getMessage(), e);
        }
    }

    /**
     * The bytes a member named {@code name} holding {@code size} bytes takes: its header record,
     * its data padded to whole records, and for a name of 100 bytes or more a PAX header entry
     * ({@code "LEN path=NAME\n"}, where LEN counts the whole line, its own digits included).
     */
    public static long memberBytes(String name, long size) {
        long bytes = RECORD + padded(size);
        int nameBytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (nameBytes >= NAME_LIMIT) {
            int rest = " path=".length() + nameBytes + 1;
            int len = rest + 1;
            while (len != rest + Integer.toString(len).length()) {
                len = rest + Integer.toString(len).length();
            }
            bytes += RECORD + padded(len);
        }
        return bytes;
    }

    private static long padded(long size) {
        return (size + RECORD - 1) / RECORD * RECORD;
    }

    /** Writes one member, {@code data[0, length)}, named {@code name}. */
    public void add(String name, byte[] data, int length) {
        long before = tar.getBytesWritten();
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(length);
        e.setMode(0100644);
        e.setIds(0, 0);
        e.setUserName("");
        e.setGroupName("");
        e.setLastModifiedTime(EPOCH);
        try {
            tar.putArchiveEntry(e);
            tar.write(data, 0, length);
            tar.closeArchiveEntry();
        } catch (IOException ex) {
            throw new UncheckedIOException("cannot write " + name + " to " + tmp + ": " + ex.getMessage(), ex);
        }
        long used = tar.getBytesWritten() - before;
        if (used != memberBytes(name, length)) {
            throw new IllegalStateException("member " + name + " took " + used + " bytes of " + tmp + ", "
                    + memberBytes(name, length) + " expected: shards would be cut at the wrong place");
        }
    }

    /** Counts one more whole sample (its members written). */
    public void sampleDone() {
        samples++;
    }

    /** Samples written so far. */
    public int samples() {
        return samples;
    }

    /** The tar's bytes so far, without the end records. */
    public long bytes() {
        return tar.getBytesWritten();
    }

    public Path target() {
        return target;
    }

    /**
     * Ends the archive, forces it to disk and renames it to its final name.
     *
     * @return the shard's size in bytes
     */
    public long commit() {
        try {
            tar.finish();
            tar.flush();
            buffered.flush();
            long size = tar.getBytesWritten();
            channel.force(true);
            tar.close();
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            done = true;
            PackFiles.forceFolder(target.getParent());
            if (Files.size(target) != size) {
                throw new IllegalStateException(
                        target + " holds " + Files.size(target) + " bytes after writing " + size);
            }
            return size;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot finish " + target + ": " + e.getMessage(), e);
        }
    }

    /** Abandons a shard not committed: its temporary file is deleted. */
    @Override
    public void close() {
        if (done) {
            return;
        }
        done = true;
        try {
            try {
                channel.close();
            } finally {
                Files.deleteIfExists(tmp);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + tmp + ": " + e.getMessage(), e);
        }
    }
}
