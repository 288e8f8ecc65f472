package io.stoke.embed;

import java.lang.foreign.MemorySegment;

/**
 * Where {@link EmbeddingJob} puts each row: row r is the r-th of the run's samples in dataset
 * order. {@link EmbeddingOutput} (.npy) takes rows in any order; {@link EmbeddingTables}
 * (Parquet) takes them in order, which a sequential loader gives.
 */
public interface EmbeddingSink {
    /**
     * Rows {@code [first, first + count)} from {@code values} ({@code count * dimension} float32
     * values, native order).
     */
    void writeRows(long first, int count, MemorySegment values);

    /** Row {@code row}'s sample ({@code path}) did not decode, and why; its embedding is zeros. */
    void skip(long row, String path, String reason);
}
