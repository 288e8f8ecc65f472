package io.stoke.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * What a job leaves in {@code OUT/_manifest.json} when it ends: the table's size, which shards
 * are in it (this run's and earlier runs'), and which are not, and why.
 *
 * @param data                the dataset embedded; a lakehouse table as the snapshot read ({@code TABLE@v12})
 * @param shards              its shards
 * @param rows                rows in the committed tables, every run's
 * @param failedRows          rows whose sample did not decode (status other than ok), in the shards
 *                            this run committed
 * @param committed           shards committed by this run
 * @param committedBefore     shards an earlier run into the same output had committed (skipped)
 * @param lostRaces           attempts whose shard another attempt had committed, among those whose
 *                            result Spark kept (their files deleted)
 * @param failed              shards with no table after Spark's retries, and why
 * @param attempts            what Spark did with this run's tasks
 * @param modelSha256         the model file's SHA-256
 * @param preprocessingSha256 the SHA-256 of {@code preprocessing}
 * @param preprocessing       the pixels the model was fed
 * @param table               the output as a lakehouse table after this run's append
 *                            ("Delta Lake table at version 3 (2 files added, 12 in all)"); null: Parquet files only
 * @param planSeconds         the driver's time from start to the first task (listing, shard catalog, markers)
 * @param seconds             the job's time, start to manifest
 */
public record Manifest(
        String data,
        int shards,
        long rows,
        long failedRows,
        int committed,
        int committedBefore,
        int lostRaces,
        List<Failure> failed,
        Attempts attempts,
        String modelSha256,
        String preprocessingSha256,
        String preprocessing,
        String table,
        double planSeconds,
        double seconds) {
    /** A shard with no table, and why. */
    public record Failure(String shard, String reason) {}

    /**
     * Spark's task attempts in this run: launched (one per shard to embed, plus retries and
     * speculative copies), speculative copies, attempts that failed or were killed, and executors
     * lost (a killed JVM, a lost machine; the normal end of an executor counts too).
     */
    public record Attempts(int launched, int speculative, int failed, int executorsLost) {}

    byte[] toJson() {
        try {
            return new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsBytes(this);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Whether every shard has its table. */
    public boolean complete() {
        return failed.isEmpty() && committed + committedBefore == shards;
    }
}
