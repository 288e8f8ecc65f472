package io.stoke.spark;

import java.io.Serializable;

/**
 * What a task says of its shard.
 *
 * @param shard      the shard's {@code shard} column
 * @param outcome    what became of it
 * @param rows       rows in its table (0 when it failed)
 * @param failed     rows whose sample did not decode (status other than ok)
 * @param reason     why the shard failed, or null
 * @param attempt    Spark's attempt number of the task that reported
 * @param executor   the executor that ran it
 * @param embedNanos the time from the task's start to its table's commit
 */
public record ShardResult(
        String shard,
        Outcome outcome,
        long rows,
        long failed,
        String reason,
        int attempt,
        String executor,
        long embedNanos)
        implements Serializable {
    /** What became of a shard. */
    public enum Outcome {
        /** This attempt's table is the shard's. */
        COMMITTED,
        /** Another attempt (a speculative copy, a retry after a lost executor) committed first; this one's file is deleted. */
        LOST_RACE,
        /** Every attempt failed: the shard has no table; {@code reason} says why. */
        FAILED
    }
}
