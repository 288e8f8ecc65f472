package io.stoke.loader.source;

import io.stoke.loader.error.SampleStatus;
import java.lang.foreign.MemorySegment;

/**
 * Gets one sample's encoded bytes: a file read into a buffer ({@link FileReader}) or a member of a
 * tar shard where it lies ({@link ShardReader}). One per worker thread; what {@link #bytes()}
 * returns stays valid until {@link #done}, the next {@link #read} or {@link #close}.
 */
public interface SampleReader extends AutoCloseable {
    /** Reads sample {@code sample}: {@link SampleStatus#OK}, or why not (details in {@link #message()}). */
    SampleStatus read(int sample);

    /** The bytes of the last sample read; valid from index 0 for {@link #length()} bytes. */
    MemorySegment bytes();

    long length();

    /** The caller is done with {@link #bytes()}: a shard's reader gives the shard back to its store. */
    default void done() {}

    /** Why the last {@link #read} failed, in words. */
    String message();

    @Override
    void close();
}
