package io.stoke.parquet;

import io.stoke.loader.source.ShardBytes;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/**
 * A local Parquet file mapped where it lies, read by parquet-java through streams over the mapping:
 * its footer when the dataset is opened, and a row group's column chunks, copied once into the row
 * group's block, when the row group is loaded. The mapping belongs to {@code arena}, the dataset's.
 */
final class MappedInputFile implements InputFile {
    private final Path path;
    private final MemorySegment file;
    private final long version;

    MappedInputFile(Path path, Arena arena) {
        this.path = path;
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            this.file =
                    ch.size() == 0 ? MemorySegment.NULL : ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
            // Taken with the mapping: the version of the bytes mapped (files are immutable while read).
            this.version = ShardBytes.versionOf(
                    ch.size(), Files.getLastModifiedTime(path).to(java.util.concurrent.TimeUnit.NANOSECONDS));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map " + path + ": " + e.getMessage(), e);
        }
    }

    /** The file's size and modification time when it was mapped ({@link ShardBytes#version}). */
    long version() {
        return version;
    }

    @Override
    public long getLength() {
        return file.byteSize();
    }

    @Override
    public SeekableInputStream newStream() {
        return new Stream();
    }

    @Override
    public String toString() {
        return path.toString();
    }

    private final class Stream extends SeekableInputStream {
        private long pos;

        @Override
        public long getPos() {
            return pos;
        }

        @Override
        public void seek(long newPos) throws IOException {
            if (newPos < 0 || newPos > file.byteSize()) {
                throw new EOFException(path + ": seek to " + newPos + " of a file of " + file.byteSize() + " bytes");
            }
            pos = newPos;
        }

        @Override
        public int read() {
            return pos < file.byteSize() ? file.get(ValueLayout.JAVA_BYTE, pos++) & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            long left = file.byteSize() - pos;
            if (left <= 0) {
                return -1;
            }
            int n = (int) Math.min(len, left);
            MemorySegment.copy(file, ValueLayout.JAVA_BYTE, pos, b, off, n);
            pos += n;
            return n;
        }

        @Override
        public void readFully(byte[] bytes) throws IOException {
            readFully(bytes, 0, bytes.length);
        }

        @Override
        public void readFully(byte[] bytes, int start, int len) throws IOException {
            need(len);
            MemorySegment.copy(file, ValueLayout.JAVA_BYTE, pos, bytes, start, len);
            pos += len;
        }

        @Override
        public int read(ByteBuffer buf) {
            long left = file.byteSize() - pos;
            if (left <= 0) {
                return buf.hasRemaining() ? -1 : 0;
            }
            int n = (int) Math.min(buf.remaining(), left);
            copyInto(buf, n);
            return n;
        }

        @Override
        public void readFully(ByteBuffer buf) throws IOException {
            need(buf.remaining());
            copyInto(buf, buf.remaining());
        }

        private void copyInto(ByteBuffer buf, int n) {
            MemorySegment.copy(file, pos, MemorySegment.ofBuffer(buf), 0, n);
            buf.position(buf.position() + n);
            pos += n;
        }

        private void need(long len) throws EOFException {
            if (len > file.byteSize() - pos) {
                throw new EOFException(path + ": " + len + " bytes wanted at " + pos + ", past the end of its "
                        + file.byteSize() + " bytes");
            }
        }
    }
}
