package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.LibC;
import io.stoke.loader.decode.ScratchImage;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.FileReader;
import io.stoke.loader.source.ShardBytes;
import io.stoke.loader.source.Shards;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The filler's reader of originals, one per filling thread: a sample's {@link OriginalId} (what
 * its entry is named by), then its bytes. Not on the workers' path: it may allocate.
 */
abstract sealed class Originals implements AutoCloseable {
    final OriginalId id = new OriginalId();

    /**
     * Sets {@link #id} to sample {@code sample}'s; false when there is nothing to cache now (the
     * file cannot be read, the member is not a JPEG, its shard is no longer loaded).
     */
    abstract boolean identify(int sample);

    /** Reads the identified original's bytes; false when they cannot be had, are not a JPEG or changed. */
    abstract boolean read(int sample);

    abstract MemorySegment bytes();

    abstract long length();

    @Override
    public abstract void close();

    /** The files of a folder or list, {@code stat}ed and read whole. */
    static final class OfFiles extends Originals {
        private final FileReader reader;
        private final Arena arena = Arena.ofConfined();
        private final MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);

        OfFiles(FileDataset dataset, long maxBytes) {
            this.reader = new FileReader(dataset, maxBytes);
        }

        @Override
        boolean identify(int sample) {
            if (reader.stat(sample, stat) != SampleStatus.OK) {
                return false;
            }
            // The path's bytes as opened (absolute), before read() builds the same path again.
            int n = reader.openedPathLength();
            byte[] path = new byte[n];
            MemorySegment.copy(reader.pathBytes(), JAVA_BYTE, 0, path, 0, n);
            id.set(
                    MemorySegment.ofArray(path),
                    0,
                    n,
                    stat.get(JAVA_LONG, LibC.ST_SIZE),
                    stat.get(JAVA_LONG, LibC.ST_MTIME_SEC),
                    stat.get(JAVA_LONG, LibC.ST_MTIME_NSEC));
            return true;
        }

        @Override
        boolean read(int sample) {
            return reader.read(sample) == SampleStatus.OK
                    && reader.length() == id.size // else changed while read
                    && ImageFormat.sniff(reader.bytes(), reader.length()) == ImageFormat.JPEG;
        }

        @Override
        MemorySegment bytes() {
            return reader.bytes();
        }

        @Override
        long length() {
            return reader.length();
        }

        @Override
        public void close() {
            reader.close();
            arena.close();
        }
    }

    /**
     * The members of a dataset's shards. The filler ({@code fetch == false}) takes a shard only while
     * it is loaded anyway, for the workers, so that it never fetches one again; {@code stoke cache}
     * fetches what it must. The member is copied out at once and the shard given back: the copy is
     * made from this reader's own buffer, so that no native call holds a shard's memory, and a
     * dataset closed while the filler works (its loaders done) closes at once; the filler's read of
     * it then fails, and is dropped.
     */
    static final class OfShards extends Originals {
        private final ShardNames names;
        private final Shards shards;
        private final ShardBytes store;
        private final boolean fetch;
        private final long maxBytes;
        private final ScratchImage buffer = new ScratchImage(256 * 1024);
        private MemorySegment bytes = MemorySegment.NULL;

        OfShards(ShardNames names, long maxBytes, boolean fetch) {
            this.names = names;
            this.maxBytes = maxBytes;
            this.shards = names.shards();
            this.store = shards.bytes();
            this.fetch = fetch;
        }

        @Override
        boolean identify(int sample) {
            bytes = MemorySegment.NULL;
            if (shards.status(sample) != SampleStatus.OK) {
                return false;
            }
            int shard = shards.shardOf(sample);
            MemorySegment all = fetch ? store.acquire(shard) : store.acquireIfLoaded(shard);
            if (all == null) {
                return false; // evicted since it was read: asked again at the next miss
            }
            long offset = shards.offset(sample);
            try {
                long length = shards.length(sample);
                if (offset < 0 || length <= 0 || length > maxBytes || offset + length > all.byteSize()) {
                    return false; // a worker's read says why
                }
                MemorySegment to = buffer.ensure(length);
                MemorySegment.copy(all, offset, to, 0, length);
                bytes = to.asSlice(0, length);
            } finally {
                store.release(shard);
            }
            if (ImageFormat.sniff(bytes, bytes.byteSize()) != ImageFormat.JPEG) {
                return false; // a PNG, a raw .npy member: not cached
            }
            names.identify(id, shard, offset, bytes, bytes.byteSize());
            return true;
        }

        /** The member's bytes were read, and checked, by {@link #identify}. */
        @Override
        boolean read(int sample) {
            return true;
        }

        @Override
        MemorySegment bytes() {
            return bytes;
        }

        @Override
        long length() {
            return bytes.byteSize();
        }

        @Override
        public void close() {
            buffer.close();
        }
    }
}
