package io.stoke.loader.internal;

import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A stream over a segment's bytes whose {@code skip} costs nothing: a shard for Commons Compress's
 * {@code TarArchiveInputStream}, an index fetched off the heap for its parser.
 */
public final class SegmentInputStream extends InputStream {
    private final MemorySegment data;
    private long position;

    public SegmentInputStream(MemorySegment data) {
        this.data = data;
    }

    @Override
    public int read() {
        return position < data.byteSize() ? data.get(ValueLayout.JAVA_BYTE, position++) & 0xFF : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
        long left = data.byteSize() - position;
        if (len == 0) {
            return 0;
        }
        if (left <= 0) {
            return -1;
        }
        int n = (int) Math.min(len, left);
        MemorySegment.copy(data, ValueLayout.JAVA_BYTE, position, b, off, n);
        position += n;
        return n;
    }

    @Override
    public long skip(long n) {
        long s = Math.max(0, Math.min(n, data.byteSize() - position));
        position += s;
        return s;
    }

    @Override
    public int available() {
        return (int) Math.min(Integer.MAX_VALUE, data.byteSize() - position);
    }
}
