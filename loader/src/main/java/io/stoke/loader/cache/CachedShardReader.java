package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.source.ShardReader;
import io.stoke.loader.source.Shards;
import java.lang.foreign.MemorySegment;

/**
 * A worker's reader of a dataset of shards (tar, local or remote; Parquet row groups) through a
 * {@link RestartCache}: each sample's image is found where it lies, as without a cache, and its
 * entry looked up by (shard, member offset and length, shard version); when the entry holds a whole
 * copy that names that member, the shard is given back at once and the copy is read instead. A
 * miss is asked of the filler, which copies the member while the shard is still loaded. Members
 * that are not JPEGs are read as they are and never asked for. Nothing is allocated per sample.
 * One per worker thread.
 */
final class CachedShardReader implements SampleReader {
    private final ShardReader members;
    private final Shards shards;
    private final ShardNames names;
    private final EntryLookup lookup;
    private final OriginalId id = new OriginalId();
    private boolean fromCache;

    CachedShardReader(RestartCache cache, Shards shards, ShardNames names, long maxBytes) {
        this.members = new ShardReader(shards, maxBytes);
        this.shards = shards;
        this.names = names;
        this.lookup = new EntryLookup(cache, maxBytes);
    }

    @Override
    public SampleStatus read(int sample) {
        fromCache = false;
        SampleStatus status = members.read(sample);
        if (status != SampleStatus.OK
                || shards.format(sample) != Shards.ENCODED
                || !isJpeg(members.bytes(), members.length())) {
            return status;
        }
        names.identify(id, sample, members.bytes(), members.length());
        int found = lookup.read(id);
        lookup.account(found, sample);
        if (found == CacheEntry.COPY) {
            fromCache = true;
            members.done(); // the copy is read instead: the shard goes back now
        }
        return SampleStatus.OK;
    }

    static boolean isJpeg(MemorySegment bytes, long length) {
        return length >= 4 && bytes.get(JAVA_BYTE, 0) == (byte) 0xFF && bytes.get(JAVA_BYTE, 1) == (byte) 0xD8;
    }

    @Override
    public MemorySegment bytes() {
        return fromCache ? lookup.content() : members.bytes();
    }

    @Override
    public long length() {
        return fromCache ? lookup.length() : members.length();
    }

    @Override
    public void done() {
        members.done();
    }

    @Override
    public String message() {
        return members.message();
    }

    @Override
    public void close() {
        members.close();
        lookup.close();
    }
}
