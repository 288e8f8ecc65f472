package io.stoke.spark;

import io.stoke.embed.InferenceDevice;
import io.stoke.loader.Workers;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.transform.TransformSpec;
import java.io.Serializable;

/**
 * What every task of one {@code spark-embed} job is told, shipped with the tasks: the model (by the
 * name {@code SparkContext.addFile} gave it, and its SHA-256), the pixels the model is fed, the
 * loader's settings, and where the tables go.
 *
 * @param modelFile       the model's file name, found on each executor with {@code SparkFiles.get}
 * @param modelSha256     the model file's SHA-256, in every commit marker
 * @param outputName      the model's output to keep (null: its only one)
 * @param transform       the pixels the model takes (the evaluation transform, fitted to its input)
 * @param preprocessing   {@code transform} in words, hashed into every commit marker
 * @param out             the output: a local or shared folder, or an {@code s3://} prefix
 * @param batchSize       samples per batch
 * @param workers         decoding threads per task: fixed, or auto at most its count and the task's
 *                        cores; null: auto, at most the task's cores ({@code spark.task.cpus})
 * @param slots           ring slots per task
 * @param intraOpThreads  ONNX Runtime's threads per operator; 0: the task's cores
 * @param device          the CPU, or CUDA: the GPU Spark gave the task, else this device
 * @param shardCacheBytes memory for a remote shard's bytes (a Parquet file's row groups) while
 *                        its task reads it
 * @param columns         a Parquet input's image, label and key columns
 * @param maxAttempts     Spark's attempts per task ({@code spark.task.maxFailures}): the last
 *                        attempt of a failing shard reports the failure instead of failing the job
 */
public record EmbedSettings(
        String modelFile,
        String modelSha256,
        String outputName,
        TransformSpec transform,
        String preprocessing,
        String out,
        int batchSize,
        Workers workers,
        int slots,
        int intraOpThreads,
        InferenceDevice device,
        long shardCacheBytes,
        TableColumns columns,
        int maxAttempts)
        implements Serializable {}
