package io.stoke.loader.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Local shards, each mapped read-only once, on first use, and kept mapped until {@link #close}: the
 * decoder reads a JPEG's bytes where they lie in the page cache, with no copy into a buffer.
 *
 * <p>A shared {@link Arena} owns every mapping, since all workers read them. A mapping only reads
 * the file's pages as they are touched, so mapping a hundred 300 MB shards costs address space,
 * not memory. (A file truncated by someone else while mapped would fault on access: shards are
 * expected to be immutable while a loader reads them, as WebDataset's are.)
 */
final class MappedShards implements ShardBytes {
    private final Arena arena = Arena.ofShared();
    private final List<Path> files;
    private final AtomicReferenceArray<MemorySegment> maps;
    private final long[] versions; // set with the mapping, read after it (published by maps)

    MappedShards(List<Path> files) {
        this.files = List.copyOf(files);
        this.maps = new AtomicReferenceArray<>(files.size());
        this.versions = new long[files.size()];
    }

    @Override
    public MemorySegment acquire(int shard) {
        MemorySegment map = maps.get(shard);
        return map != null ? map : map(shard);
    }

    private synchronized MemorySegment map(int shard) {
        MemorySegment map = maps.get(shard);
        if (map == null) {
            Path file = files.get(shard);
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                long size = channel.size();
                // Taken with the mapping: the version of the bytes mapped (shards are immutable while read).
                versions[shard] = ShardBytes.versionOf(
                        size, Files.getLastModifiedTime(file).to(java.util.concurrent.TimeUnit.NANOSECONDS));
                map = size == 0
                        ? MemorySegment.NULL.reinterpret(0)
                        : channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot map shard " + file + ": " + e.getMessage(), e);
            }
            maps.set(shard, map);
        }
        return map;
    }

    /** The file's size and modification time when it was mapped; the shard is mapped if it was not. */
    @Override
    public long version(int shard) {
        acquire(shard); // maps.get is a volatile read: it publishes versions[shard], written before the set
        return versions[shard];
    }

    @Override
    public long size(int shard) {
        try {
            return Files.size(files.get(shard));
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot read the size of shard " + files.get(shard) + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void release(int shard) {
        // Mappings live until close: the page cache, not this class, decides what stays in memory.
    }

    @Override
    public void close() {
        arena.close();
    }
}
