package io.stoke.spark;

import java.io.Serializable;

/**
 * One input file to embed, a tar shard or a Parquet file: what the driver knows of it from the
 * listing, the shard catalog or the file's footer.
 *
 * @param spec    where the task opens it: a local path or a URL
 * @param shard   its {@code shard} column (its file name)
 * @param table   its table's file name in the output
 * @param samples its sample count (a Parquet file's rows), which the task checks against what it reads
 */
public record ShardTask(String spec, String shard, String table, int samples) implements Serializable {}
