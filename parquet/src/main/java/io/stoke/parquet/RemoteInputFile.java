package io.stoke.parquet;

import io.stoke.remote.ObjectStore;
import io.stoke.remote.ShardFetchException;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/**
 * A Parquet file in an object store, read by parquet-java in ranged GETs: its footer out of one GET
 * of the file's tail, and a row group's column chunks straight into the row group's block. The
 * first read pins the object's version (its ETag): a file replaced while the dataset is open is
 * named, never read as a mix of two versions.
 */
final class RemoteInputFile implements InputFile {
    /** Bytes of the tail fetched at once: the footer of a file of a few columns fits many times over. */
    static final int TAIL_BYTES = 64 << 10;

    private final ObjectStore store;
    private final String url;
    private volatile long size; // -1 until asked (a HEAD), when not known from a listing or a catalog
    private final AtomicReference<String> etag;
    private volatile byte[] tail; // the last min(size, TAIL_BYTES) bytes, once read

    private final String catalogUrl; // null: the size and version come from the store

    /**
     * @param size    the object's size, or -1 to ask the store
     * @param etag    its version, or null to pin the first read's
     * @param catalogUrl the catalog the size and ETag come from, or null
     */
    RemoteInputFile(ObjectStore store, String url, long size, String etag, String catalogUrl) {
        this.store = store;
        this.url = url;
        this.size = size;
        this.etag = new AtomicReference<>(etag);
        this.catalogUrl = catalogUrl;
    }

    /** The object's size: known, else asked of the store once (a HEAD). */
    @Override
    public long getLength() {
        long n = size;
        if (n < 0) {
            n = store.size(url);
            size = n;
        }
        return n;
    }

    @Override
    public SeekableInputStream newStream() {
        return new Stream();
    }

    String url() {
        return url;
    }

    String etag() {
        return etag.get();
    }

    /** Reads {@code dst.byteSize()} bytes at {@code offset} from the store, of the pinned version. */
    private void fetch(long offset, MemorySegment dst) {
        String read;
        try {
            read = store.readRange(url, offset, getLength(), dst, etag.get());
        } catch (ShardFetchException e) {
            if (e.changed()) {
                String pinnedBy = catalogUrl != null
                        ? "the catalog " + catalogUrl + " was written: run `stoke catalog` on the files again"
                        : "the dataset was opened";
                throw new ShardFetchException(
                        url, "the object changed since " + pinnedBy + " (" + e.getMessage() + ")", e);
            }
            if (e.notFound() && catalogUrl != null) {
                throw ShardFetchException.goneSinceCatalogued(url, "the catalog " + catalogUrl, "files", e);
            }
            throw e;
        }
        if (read != null) {
            etag.compareAndSet(null, read);
        }
    }

    private byte[] tail() {
        byte[] t = tail;
        if (t == null) {
            long size = getLength();
            int n = (int) Math.min(size, TAIL_BYTES);
            try (Arena arena = Arena.ofShared()) { // the store's threads write the parts
                MemorySegment bytes = arena.allocate(Math.max(1, n)).asSlice(0, n);
                fetch(size - n, bytes);
                t = bytes.toArray(ValueLayout.JAVA_BYTE);
            }
            tail = t;
        }
        return t;
    }

    @Override
    public String toString() {
        return url;
    }

    private final class Stream extends SeekableInputStream {
        private final long size = getLength();
        private long pos;

        @Override
        public long getPos() {
            return pos;
        }

        @Override
        public void seek(long newPos) throws IOException {
            if (newPos < 0 || newPos > size) {
                throw new EOFException(url + ": seek to " + newPos + " of an object of " + size + " bytes");
            }
            pos = newPos;
        }

        @Override
        public int read() throws IOException {
            if (pos >= size) {
                return -1;
            }
            byte[] one = new byte[1];
            readFully(one, 0, 1);
            return one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (pos >= size) {
                return -1;
            }
            int n = (int) Math.min(len, size - pos);
            readFully(b, off, n);
            return n;
        }

        @Override
        public void readFully(byte[] bytes) throws IOException {
            readFully(bytes, 0, bytes.length);
        }

        @Override
        public void readFully(byte[] bytes, int start, int len) throws IOException {
            need(len);
            read(MemorySegment.ofArray(bytes).asSlice(start, len));
        }

        @Override
        public int read(ByteBuffer buf) throws IOException {
            if (pos >= size) {
                return buf.hasRemaining() ? -1 : 0;
            }
            int n = (int) Math.min(buf.remaining(), size - pos);
            read(MemorySegment.ofBuffer(buf).asSlice(0, n));
            buf.position(buf.position() + n);
            return n;
        }

        @Override
        public void readFully(ByteBuffer buf) throws IOException {
            need(buf.remaining());
            int n = buf.remaining();
            read(MemorySegment.ofBuffer(buf));
            buf.position(buf.position() + n);
        }

        /** Fills {@code dst} from {@code pos}: out of the tail when it lies there, else by a ranged GET. */
        private void read(MemorySegment dst) {
            long n = dst.byteSize();
            if (n == 0) {
                return;
            }
            long tailStart = size - Math.min(size, TAIL_BYTES);
            if (pos >= tailStart) {
                MemorySegment.copy(MemorySegment.ofArray(tail()), pos - tailStart, dst, 0, n);
            } else {
                fetch(pos, dst);
            }
            pos += n;
        }

        private void need(long len) throws EOFException {
            if (len > size - pos) {
                throw new EOFException(
                        url + ": " + len + " bytes wanted at " + pos + ", past the end of its " + size + " bytes");
            }
        }
    }
}
