package io.stoke.lakehouse;

import io.stoke.loader.source.Datasets;
import io.stoke.remote.ObjectStore;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A file of a table's log or metadata, read forward from a position that can be moved: a local
 * file through its channel, an object at a URL by ranged GETs of up to {@value #REMOTE_CHUNK} bytes,
 * each buffered. Delta Kernel's and Iceberg's input streams are both this, behind their own faces
 * ({@link KernelFileIO}, {@link IcebergFileIO}). Its owner closes it.
 */
abstract sealed class PositionedFile implements AutoCloseable {
    /** Bytes fetched per ranged GET of a remote file. */
    static final int REMOTE_CHUNK = 1 << 20;

    long pos;

    /** {@code path} (a local path, a {@code file:} URI or a URL) of {@code size} bytes; {@code store}: where a URL is read. */
    static PositionedFile open(String path, long size, ObjectStore store) throws IOException {
        if (Datasets.isUrl(path)) {
            if (store == null) {
                throw new IOException(path + " is a URL in a local table's metadata: not read");
            }
            return new Remote(path, size, store);
        }
        return new Local(local(path));
    }

    /**
     * A local path from a path or a {@code file:} URI ({@code file:/a}, {@code file:///a}), its
     * escapes decoded; one that is no URI as written ({@code file:/a b}, as Hadoop's paths print) is
     * taken as it is.
     */
    static Path local(String path) {
        if (path.startsWith("file:")) {
            String uri = path.startsWith("file://") ? path : "file://" + path.substring(5);
            try {
                return Path.of(URI.create(uri));
            } catch (IllegalArgumentException e) {
                return Path.of(uri.substring("file://".length()));
            }
        }
        return Path.of(path);
    }

    /** Up to {@code len} bytes at the position into {@code b}, which moves past them; -1 at the end. */
    abstract int read(byte[] b, int off, int len) throws IOException;

    /** {@link #read()}'s byte: one per file, where the metadata and log parsers read byte by byte. */
    private final byte[] one = new byte[1];

    int read() throws IOException {
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    void readFully(byte[] b, int off, int len) throws IOException {
        while (len > 0) {
            int n = read(b, off, len);
            if (n < 0) {
                throw new EOFException(this + " ends with " + len + " bytes still to read");
            }
            off += n;
            len -= n;
        }
    }

    @Override
    public abstract void close() throws IOException;

    private static final class Local extends PositionedFile {
        private final Path path;
        private final FileChannel channel;

        Local(Path path) throws IOException {
            this.path = path;
            this.channel = FileChannel.open(path, StandardOpenOption.READ);
        }

        @Override
        int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            int n = channel.read(ByteBuffer.wrap(b, off, len), pos);
            if (n > 0) {
                pos += n;
            }
            return n;
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }

        @Override
        public String toString() {
            return path.toString();
        }
    }

    private static final class Remote extends PositionedFile {
        private final String url;
        private final long size;
        private final ObjectStore store;
        private final byte[] chunk;
        private long chunkStart = -1;
        private int chunkLength;

        Remote(String url, long size, ObjectStore store) {
            this.url = url;
            this.size = size;
            this.store = store;
            this.chunk = new byte[(int) Math.min(REMOTE_CHUNK, Math.max(1, size))];
        }

        @Override
        int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            if (pos >= size) {
                return -1;
            }
            if (chunkStart < 0 || pos < chunkStart || pos >= chunkStart + chunkLength) {
                int length = (int) Math.min(chunk.length, size - pos);
                store.readRange(url, pos, size, MemorySegment.ofArray(chunk).asSlice(0, length), null);
                chunkStart = pos;
                chunkLength = length;
            }
            int n = (int) Math.min(len, chunkStart + chunkLength - pos);
            System.arraycopy(chunk, (int) (pos - chunkStart), b, off, n);
            pos += n;
            return n;
        }

        @Override
        public void close() {}

        @Override
        public String toString() {
            return url;
        }
    }
}
