package io.stoke.spark;

import ai.onnxruntime.OrtException;
import io.stoke.embed.Embedder;
import io.stoke.embed.InferenceDevice;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The ONNX Runtime sessions of one executor JVM, kept between its tasks: a model is loaded once
 * per task slot, not once per shard. A task borrows an idle embedder of its model (or opens one)
 * and gives it back when its shard is done; embedders are never shared by two running tasks.
 */
final class ModelCache {
    private static final Map<String, Queue<Embedder>> IDLE = new ConcurrentHashMap<>();

    private ModelCache() {}

    /** What identifies an embedder: the model's bytes and every setting it was opened with. */
    static String key(String modelSha256, int threads, InferenceDevice device, String outputName) {
        return modelSha256 + "/" + threads + "/" + device + "/" + outputName;
    }

    /**
     * An idle embedder of {@code key}, or a new one of {@code model}, whose bytes must hash to
     * {@code sha256}: the file Spark shipped here is the one the driver hashed, or the task fails.
     */
    static Embedder borrow(
            String key, Path model, String sha256, int threads, InferenceDevice device, String outputName)
            throws OrtException, IOException {
        Embedder idle =
                IDLE.computeIfAbsent(key, k -> new ConcurrentLinkedQueue<>()).poll();
        if (idle != null) {
            return idle;
        }
        String here = SparkEmbed.sha256(model);
        if (!here.equals(sha256)) {
            throw new IllegalStateException("the executor's copy of the model " + model + " has SHA-256 " + here
                    + ", the driver's " + sha256 + " (another file of the same name was shipped to this session)");
        }
        return Embedder.open(model, threads, device, outputName);
    }

    static void giveBack(String key, Embedder embedder) {
        IDLE.computeIfAbsent(key, k -> new ConcurrentLinkedQueue<>()).add(embedder);
    }
}
