package io.stoke.loader.transform;

import io.stoke.ffm.LibC;
import io.stoke.loader.source.SampleIndex;
import java.lang.foreign.MemorySegment;

/**
 * Read, decode, resize and crop one sample into its place in a slot. One per worker thread; it
 * owns that thread's file buffer, {@code tjhandle} and scratch images. The training transform's
 * crop and flip are drawn from the header's size before anything is decoded, from a generator
 * keyed by (seed, epoch, dataset index) alone.
 */
public final class SampleTransform implements AutoCloseable {
    private final FileReader reader;
    private final JpegDecoder decoder;
    private final Resampler resampler;
    private final SampleIndex index;
    private final RandomResizedCrop train;
    private final long seed;
    private final CounterRandom random = new CounterRandom();
    private final CropBox box = new CropBox();
    private long lastSourceBytes;
    private String message;

    /** The evaluation transform, or the training one with seed 0. */
    public SampleTransform(SampleIndex index, TransformSpec spec) {
        this(index, spec, 0);
    }

    /** @param seed keys the training transform's random crops and flips (with the epoch and index) */
    public SampleTransform(SampleIndex index, TransformSpec spec, long seed) {
        this.index = index;
        this.train = spec.train();
        this.seed = seed;
        this.reader = new FileReader(index, spec.maxFileBytes());
        this.decoder = new JpegDecoder(spec);
        this.resampler = new Resampler(spec);
    }

    /** {@link #apply(int, long, MemorySegment, long)} in epoch 0. */
    public SampleStatus apply(int sample, MemorySegment dst, long offset) {
        return apply(sample, 0, dst, offset);
    }

    /**
     * Writes sample {@code sample}'s pixels, as transformed in epoch {@code epoch}, at
     * {@code dst[offset, offset + sampleBytes)}. On any status but {@link SampleStatus#OK}
     * nothing has been written there.
     */
    public SampleStatus apply(int sample, long epoch, MemorySegment dst, long offset) {
        message = null;
        lastSourceBytes = 0;
        SampleStatus status = reader.read(sample);
        if (status != SampleStatus.OK) {
            message = status == SampleStatus.READ_ERROR ? LibC.strerror(reader.lastErrno()) : status.description();
            return status;
        }
        lastSourceBytes = reader.length();
        if (train == null) {
            status = decoder.decode(reader.buffer(), reader.length());
            if (status != SampleStatus.OK) {
                message = decoder.message();
                return status;
            }
            resampler.resizeCrop(decoder.image(), decoder.width(), decoder.height(),
                    decoder.originalWidth(), decoder.originalHeight(), dst, offset);
            return SampleStatus.OK;
        }
        status = decoder.readHeader(reader.buffer(), reader.length());
        if (status == SampleStatus.OK) {
            random.reset(seed, epoch, sample);
            train.draw(decoder.originalWidth(), decoder.originalHeight(), random, box);
            status = decoder.decodeBox(reader.buffer(), reader.length(), box, resampler.outputSide());
        }
        if (status != SampleStatus.OK) {
            message = decoder.message();
            return status;
        }
        resampler.resizedCrop(decoder.image(), decoder.width(), decoder.height(), decoder.regionX(), decoder.regionY(),
                decoder.scaledWidth(), decoder.scaledHeight(), decoder.originalWidth(), decoder.originalHeight(), box, dst,
                offset);
        return SampleStatus.OK;
    }

    /** The crop box and flip of the last sample under the training transform (for tests). */
    public CropBox lastBox() {
        return box;
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
