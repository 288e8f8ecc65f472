package io.stoke.loader.transform;

import io.stoke.ffm.LibC;
import io.stoke.loader.source.SampleIndex;
import java.lang.foreign.MemorySegment;

/**
 * Read, decode, resize and crop one sample into its place in a slot. One per worker thread; it
 * owns that thread's file buffer, {@code tjhandle} and scratch images.
 */
public final class SampleTransform implements AutoCloseable {
    private final FileReader reader;
    private final JpegDecoder decoder;
    private final Resampler resampler;
    private final SampleIndex index;
    private long lastSourceBytes;
    private String message;

    public SampleTransform(SampleIndex index, TransformSpec spec) {
        this.index = index;
        this.reader = new FileReader(index, spec.maxFileBytes());
        this.decoder = new JpegDecoder(spec);
        this.resampler = new Resampler(spec);
    }

    /**
     * Writes sample {@code sample}'s pixels at {@code dst[offset, offset + sampleBytes)}. On any
     * status but {@link SampleStatus#OK} nothing has been written there.
     */
    public SampleStatus apply(int sample, MemorySegment dst, long offset) {
        message = null;
        lastSourceBytes = 0;
        SampleStatus status = reader.read(sample);
        if (status != SampleStatus.OK) {
            message = status == SampleStatus.READ_ERROR ? LibC.strerror(reader.lastErrno()) : status.description();
            return status;
        }
        lastSourceBytes = reader.length();
        status = decoder.decode(reader.buffer(), reader.length());
        if (status != SampleStatus.OK) {
            message = decoder.message();
            return status;
        }
        resampler.resizeCrop(decoder.image(), decoder.width(), decoder.height(),
                decoder.originalWidth(), decoder.originalHeight(), dst, offset);
        return SampleStatus.OK;
    }

    /** Compressed bytes read for the last sample. */
    public long lastSourceBytes() {
        return lastSourceBytes;
    }

    /** Why the last sample failed, in words (allocates only on failure). */
    public String message() {
        return message;
    }

    public SampleIndex index() {
        return index;
    }

    @Override
    public void close() {
        reader.close();
        decoder.close();
        resampler.close();
    }
}
