package io.stoke.pack;

/** One pack worker's tool: makes a sample's member, or says why it has none. One per thread. */
interface SampleEncoder extends AutoCloseable {
    /** Fills {@code out} with sample {@code sample}'s member bytes, or the reason it has none. */
    void encode(int sample, EncodedSample out);

    @Override
    void close();
}
