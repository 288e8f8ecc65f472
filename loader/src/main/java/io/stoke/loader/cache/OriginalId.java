package io.stoke.loader.cache;

import java.lang.foreign.MemorySegment;

/**
 * What a {@link CacheEntry} names its original by, and what it is filed under ({@link #key}): the
 * original's name as bytes, its size, and two words that date it. For a file: its absolute path
 * as opened (so a folder and a list naming the same file share its entry, and two folders with
 * the same layout do not), its size and its modification time (seconds, nanoseconds). For a member of a
 * shard: the shard's name (a local
 * one made absolute), the member's length, its offset in the shard and the shard's version
 * ({@link io.stoke.loader.source.ShardBytes#version}), or, where the store gave no version, a hash
 * of the member's bytes. A flyweight its owner fills for each sample; nothing is allocated.
 */
final class OriginalId {
    MemorySegment name = MemorySegment.NULL;
    long nameOffset;
    int nameLength;
    long size;
    long first;
    long second;

    void set(MemorySegment name, long nameOffset, int nameLength, long size, long first, long second) {
        this.name = name;
        this.nameOffset = nameOffset;
        this.nameLength = nameLength;
        this.size = size;
        this.first = first;
        this.second = second;
    }

    long key() {
        return CacheEntry.key(name, nameOffset, nameLength, size, first, second);
    }

    /** Whether the header in {@code entry} is whole and names this original. */
    boolean namedBy(MemorySegment entry) {
        return CacheEntry.names(entry, name, nameOffset, nameLength, size, first, second);
    }

    /** Writes the header of an entry of {@code kind} for this original into {@code entry}. */
    void writeHeader(MemorySegment entry, int kind, long contentLength, long contentHash) {
        CacheEntry.write(entry, kind, name, nameOffset, nameLength, size, first, second, contentLength, contentHash);
    }
}
