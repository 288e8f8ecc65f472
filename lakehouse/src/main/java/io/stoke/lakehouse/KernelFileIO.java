package io.stoke.lakehouse;

import io.delta.kernel.defaults.engine.fileio.FileIO;
import io.delta.kernel.defaults.engine.fileio.InputFile;
import io.delta.kernel.defaults.engine.fileio.OutputFile;
import io.delta.kernel.defaults.engine.fileio.SeekableInputStream;
import io.delta.kernel.utils.CloseableIterator;
import io.delta.kernel.utils.FileStatus;
import io.stoke.loader.source.Datasets;
import io.stoke.remote.ObjectStore;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Delta Kernel's file access, read-only, over Stoke's own: local files through NIO, and objects at
 * {@code s3://} through stoke-remote's {@link ObjectStore} (its listings and ranged GETs, with its
 * retries and credentials). So a table's log is replayed with no Hadoop file system. Kernel names
 * local files as {@code file:} URIs ({@link #resolvePath}); anything that would write is refused,
 * since Stoke only reads tables.
 */
final class KernelFileIO implements FileIO {
    /** Bytes fetched per ranged GET of a remote log or checkpoint file. */
    private static final int REMOTE_CHUNK = 1 << 20;

    private final ObjectStore store; // null: local files only

    KernelFileIO(ObjectStore store) {
        this.store = store;
    }

    @Override
    public CloseableIterator<FileStatus> listFrom(String filePath) throws IOException {
        List<FileStatus> out = new ArrayList<>();
        if (Datasets.isUrl(filePath)) {
            String folder = filePath.substring(0, filePath.lastIndexOf('/') + 1);
            for (ObjectStore.Listed o : remote().listFrom(folder, null)) {
                String name = o.url().substring(folder.length());
                if (name.indexOf('/') < 0 && o.url().compareTo(filePath) >= 0) {
                    out.add(FileStatus.of(o.url(), o.size(), o.lastModifiedMillis()));
                }
            }
        } else {
            Path file = local(filePath);
            Path dir = file.getParent();
            String from = file.getFileName().toString();
            if (!Files.isDirectory(dir)) {
                throw new FileNotFoundException(dir + " does not exist");
            }
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
                for (Path p : entries) {
                    if (Files.isRegularFile(p) && p.getFileName().toString().compareTo(from) >= 0) {
                        out.add(status(p));
                    }
                }
            }
        }
        out.sort((a, b) -> a.getPath().compareTo(b.getPath()));
        java.util.Iterator<FileStatus> it = out.iterator();
        return new CloseableIterator<>() {
            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public FileStatus next() {
                return it.next();
            }

            @Override
            public void close() {}
        };
    }

    @Override
    public FileStatus getFileStatus(String path) throws IOException {
        if (Datasets.isUrl(path)) {
            ObjectStore.Stat stat = remote().stat(path);
            return FileStatus.of(path, stat.size(), 0);
        }
        try {
            return status(local(path));
        } catch (NoSuchFileException e) {
            throw new FileNotFoundException(path + " does not exist");
        }
    }

    @Override
    public String resolvePath(String path) {
        if (Datasets.isUrl(path)) {
            return path;
        }
        return local(path).toAbsolutePath().normalize().toUri().toString().replaceFirst("^file:///", "file:/");
    }

    @Override
    public InputFile newInputFile(String path, long size) {
        return new InputFile() {
            @Override
            public long length() throws IOException {
                return size >= 0 ? size : getFileStatus(path).getSize();
            }

            @Override
            public String path() {
                return path;
            }

            @Override
            public SeekableInputStream newStream() throws IOException {
                return Datasets.isUrl(path) ? new RemoteStream(path, length()) : new LocalStream(local(path));
            }
        };
    }

    @Override
    public Optional<String> getConf(String key) {
        return Optional.empty();
    }

    @Override
    public boolean mkdirs(String path) {
        throw readOnly(path);
    }

    @Override
    public OutputFile newOutputFile(String path) {
        throw readOnly(path);
    }

    @Override
    public boolean delete(String path) {
        throw readOnly(path);
    }

    @Override
    public void copyFileAtomically(String from, String to, boolean overwrite) {
        throw readOnly(to);
    }

    private static UnsupportedOperationException readOnly(String path) {
        return new UnsupportedOperationException("Stoke reads tables and writes none: not writing " + path);
    }

    private ObjectStore remote() {
        if (store == null) {
            throw new IllegalStateException("a URL in a local table's log");
        }
        return store;
    }

    private static FileStatus status(Path p) throws IOException {
        return FileStatus.of(
                p.toUri().toString().replaceFirst("^file:///", "file:/"),
                Files.size(p),
                Files.getLastModifiedTime(p).toMillis());
    }

    /** A local path from a path or a {@code file:} URI, as Kernel names them. */
    static Path local(String path) {
        if (path.startsWith("file:")) {
            return Path.of(URI.create(path.startsWith("file://") ? path : "file://" + path.substring(5)));
        }
        return Path.of(path);
    }

    /** A local file read through its channel. */
    private static final class LocalStream extends SeekableInputStream {
        private final FileChannel channel;

        LocalStream(Path path) throws IOException {
            this.channel = FileChannel.open(path, StandardOpenOption.READ);
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            return len == 0 ? 0 : channel.read(ByteBuffer.wrap(b, off, len));
        }

        @Override
        public long getPos() throws IOException {
            return channel.position();
        }

        @Override
        public void seek(long pos) throws IOException {
            channel.position(pos);
        }

        @Override
        public void readFully(byte[] b, int off, int len) throws IOException {
            ByteBuffer buf = ByteBuffer.wrap(b, off, len);
            while (buf.hasRemaining()) {
                if (channel.read(buf) < 0) {
                    throw new EOFException("end of file with " + buf.remaining() + " bytes still to read");
                }
            }
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /** An object read by ranged GETs of up to {@value #REMOTE_CHUNK} bytes, each buffered. */
    private final class RemoteStream extends SeekableInputStream {
        private final String url;
        private final long size;
        private final byte[] chunk;
        private long chunkStart = -1;
        private int chunkLength;
        private long pos;

        RemoteStream(String url, long size) {
            this.url = url;
            this.size = size;
            this.chunk = new byte[(int) Math.min(REMOTE_CHUNK, Math.max(1, size))];
        }

        private boolean fill() {
            if (pos >= size) {
                return false;
            }
            if (chunkStart < 0 || pos < chunkStart || pos >= chunkStart + chunkLength) {
                int length = (int) Math.min(chunk.length, size - pos);
                remote().readRange(url, pos, size, MemorySegment.ofArray(chunk).asSlice(0, length), null);
                chunkStart = pos;
                chunkLength = length;
            }
            return true;
        }

        @Override
        public int read() {
            if (!fill()) {
                return -1;
            }
            return chunk[(int) (pos++ - chunkStart)] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            if (!fill()) {
                return -1;
            }
            int n = (int) Math.min(len, chunkStart + chunkLength - pos);
            System.arraycopy(chunk, (int) (pos - chunkStart), b, off, n);
            pos += n;
            return n;
        }

        @Override
        public long getPos() {
            return pos;
        }

        @Override
        public void seek(long newPos) {
            pos = newPos;
        }

        @Override
        public void readFully(byte[] b, int off, int len) throws IOException {
            while (len > 0) {
                int n = read(b, off, len);
                if (n < 0) {
                    throw new EOFException(url + " ends with " + len + " bytes still to read");
                }
                off += n;
                len -= n;
            }
        }
    }
}
