package io.stoke.loader.cache;

import io.stoke.loader.decode.CopyOnDecode;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.source.ShardReader;
import io.stoke.loader.source.Shards;
import java.lang.foreign.MemorySegment;

/**
 * A worker's reader of a dataset of shards (tar, local or remote; Parquet row groups) through a
 * {@link RestartCache}: each sample's image is found where it lies, as without a cache, and its
 * entry looked up by (shard, member offset and length, shard version); when the entry holds a whole
 * copy that names that member, the shard is given back at once and the copy is read instead. A
 * miss is copied by the worker as it decodes it while the loader has slack ({@link MissCopy},
 * {@link CopyOnDecode}), and otherwise asked of the filler, which copies the member while the shard
 * is still loaded. Members
 * that are not JPEGs are read as they are and never asked for. Nothing is allocated per sample.
 * One per worker thread.
 */
final class CachedShardReader implements SampleReader, CopyOnDecode {
    private final ShardReader members;
    private final ShardNames names;
    private final EntryLookup lookup;
    private final MissCopy missCopy;
    private final OriginalId id = new OriginalId();
    private MemorySegment served = MemorySegment.NULL; // the entry's copy, or NULL: the member
    private long servedLength;

    CachedShardReader(RestartCache cache, Shards shards, ShardNames names, long maxBytes) {
        this.members = new ShardReader(shards, maxBytes);
        this.names = names;
        this.lookup = new EntryLookup(cache, maxBytes);
        this.missCopy = new MissCopy(cache, id);
    }

    @Override
    public SampleStatus read(int sample) {
        missCopy.unresolved(); // the last read's miss, if its decode never said
        served = MemorySegment.NULL;
        SampleStatus status = members.read(sample);
        if (status != SampleStatus.OK || ImageFormat.sniff(members.bytes(), members.length()) != ImageFormat.JPEG) {
            return status; // a PNG, a raw .npy member: read as it is
        }
        names.identify(id, members.shard(), members.offset(), members.bytes(), members.length());
        int found = lookup.read(id);
        if (lookup.miss(found)) {
            missCopy.miss(sample);
        }
        if (found == CacheEntry.COPY) {
            served = lookup.content();
            servedLength = lookup.length();
            members.done(); // a copy is read instead: the shard goes back now
        }
        return SampleStatus.OK;
    }

    @Override
    public RestartCopy wantedCopy() {
        return missCopy.wantedCopy();
    }

    @Override
    public void decoded(boolean copied) {
        missCopy.decoded(copied);
    }

    @Override
    public MemorySegment bytes() {
        return served != MemorySegment.NULL ? served : members.bytes();
    }

    @Override
    public long length() {
        return served != MemorySegment.NULL ? servedLength : members.length();
    }

    @Override
    public void done() {
        missCopy.unresolved();
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
        missCopy.close();
    }
}
