package io.stoke.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * What a shard's commit marker holds: which attempt's table is the shard's, and what made it. A
 * marker exists at most once per shard (created only where none is); a rerun into the same output
 * skips the shards that have one, and refuses to mix in another model or preprocessing.
 *
 * @param shard               the shard's {@code shard} column
 * @param table               its table's file name
 * @param attemptFile         the attempt's own file, relative to the output (local output), or null
 * @param rows                rows in the table
 * @param failedRows          rows whose sample did not decode
 * @param modelSha256         the model file's SHA-256
 * @param preprocessingSha256 the SHA-256 of {@code preprocessing}
 * @param preprocessing       the pixels the model was fed, in words
 * @param attempt             the attempt that committed: Spark's application and task attempt ids,
 *                            which make each attempt's marker bytes its own (ObjectStore.create
 *                            recognises its own retried PUT by them)
 * @param executor            the executor whose attempt committed
 * @param seconds             the attempt's time from its start to its table written (before the commit)
 */
public record CommitMarker(
        String shard,
        String table,
        String attemptFile,
        long rows,
        long failedRows,
        String modelSha256,
        String preprocessingSha256,
        String preprocessing,
        String attempt,
        String executor,
        double seconds) {
    private static final ObjectMapper JSON = new ObjectMapper();

    byte[] toJson() {
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(this);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static CommitMarker fromJson(byte[] json, String where) {
        try {
            return JSON.readValue(json, CommitMarker.class);
        } catch (IOException e) {
            throw new IllegalStateException("the commit marker " + where + " cannot be read: " + e.getMessage(), e);
        }
    }
}
