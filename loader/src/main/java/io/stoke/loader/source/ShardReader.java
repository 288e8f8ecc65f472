package io.stoke.loader.source;

import io.stoke.loader.error.SampleStatus;
import java.lang.foreign.MemorySegment;

/**
 * Reads a sample's image where it lies in its shard's bytes: {@link #bytes()} is a view of a tar
 * shard's mapping (or of its download in the shard cache), or of a Parquet row group's decompressed pages,
 * so the decoder reads the bytes in place, with no copy. The shard stays acquired from {@link #read} until {@link #done} (or the next read, or
 * {@link #close}). One per worker.
 */
public final class ShardReader implements SampleReader {
    private final Shards shards;
    private final ShardBytes store;
    private final long maxBytes;
    private int held = -1;
    private MemorySegment shardBytes = MemorySegment.NULL;
    private MemorySegment bytes = MemorySegment.NULL;
    private long length;
    private long offset;
    private String message;

    public ShardReader(Shards shards, long maxBytes) {
        this.shards = shards;
        this.store = shards.bytes();
        this.maxBytes = maxBytes;
    }

    @Override
    public SampleStatus read(int sample) {
        releaseHeld(); // normally done() already gave it back
        bytes = MemorySegment.NULL;
        length = 0;
        message = null;
        int shard = shards.shardOf(sample);
        ShardTable table = shards.table(shard); // from an index: built here, from the shard's own bytes
        int i = sample - shards.firstSample(shard);
        SampleStatus status = table.status(i);
        if (status != SampleStatus.OK) {
            message = table.detail(i);
            return status;
        }
        long size = table.length(i);
        if (size == 0) {
            return SampleStatus.EMPTY_FILE;
        }
        if (size > maxBytes) {
            message = "member of " + size + " bytes, over the budget of " + maxBytes;
            return SampleStatus.TOO_LARGE;
        }
        shardBytes = store.acquire(shard);
        held = shard;
        offset = table.offset(i);
        if (offset + size > shardBytes.byteSize()) { // the scan checked this; a shard replaced since then did not
            message = "member at " + offset + "+" + size + " past the shard's " + shardBytes.byteSize() + " bytes";
            return SampleStatus.MEMBER_TRUNCATED;
        }
        // One small view object per sample: the FFM calls downstream take a segment, not an address.
        bytes = shardBytes.asSlice(offset, size);
        length = size;
        return SampleStatus.OK;
    }

    /**
     * Gives the shard back as soon as the sample is decoded. A reader holds a shard only while it
     * decodes, which always finishes; so a reader waiting for room in the remote cache waits for
     * something that comes, whatever the number of workers (holding it across samples could wait
     * on a worker that is itself waiting for a free slot).
     */
    @Override
    public void done() {
        releaseHeld();
    }

    private void releaseHeld() {
        if (held >= 0) {
            bytes = MemorySegment.NULL;
            shardBytes = MemorySegment.NULL;
            store.release(held);
            held = -1;
        }
    }

    @Override
    public MemorySegment bytes() {
        return bytes;
    }

    /** The shard the last sample read lies in (its bytes' {@link ShardBytes#version} names them). */
    public int shard() {
        return held;
    }

    /** Where the last sample read lies in its shard's bytes. */
    public long offset() {
        return offset;
    }

    @Override
    public long length() {
        return length;
    }

    @Override
    public String message() {
        return message;
    }

    @Override
    public void close() {
        releaseHeld();
    }
}
