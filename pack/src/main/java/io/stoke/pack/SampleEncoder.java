package io.stoke.pack;

import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.SampleReader;

/** One pack worker's tool: makes a sample's member, or says why it has none. One per thread. */
interface SampleEncoder extends AutoCloseable {
    /**
     * Reads sample {@code sample} with {@code reader}: true with its bytes there, or false with
     * {@code out} failed for the reason (a file's reader says why a read failed, strerror; a
     * Parquet row's, why its image is missing) and the reader done.
     */
    static boolean read(SampleReader reader, int sample, EncodedSample out) {
        out.sourceBytes = 0;
        SampleStatus status = reader.read(sample);
        if (status == SampleStatus.OK) {
            return true;
        }
        String why = reader.message();
        out.fail(status, why != null ? why : status.description());
        reader.done();
        return false;
    }

    /** Fills {@code out} with sample {@code sample}'s member bytes, or the reason it has none. */
    void encode(int sample, EncodedSample out);

    @Override
    void close();
}
