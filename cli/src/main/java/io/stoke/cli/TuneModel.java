package io.stoke.cli;

import ai.onnxruntime.OrtException;
import io.stoke.embed.Embedder;
import io.stoke.embed.InferenceDevice;
import io.stoke.tune.ModelStep;
import io.stoke.tune.Step;
import java.io.PrintStream;
import java.nio.file.Path;

/**
 * Opens {@code stoke tune --model}'s step. A class of its own, so that {@link TuneCommand} names no
 * ONNX Runtime type: a build without it (the Python wheel) still tunes a sleep step.
 */
final class TuneModel {
    private TuneModel() {}

    /** The model's step, or null when the model cannot be opened (said on {@code err}). */
    static Step open(Path model, int intraOpThreads, String outputName, PrintStream err) {
        try {
            return new ModelStep(
                    Embedder.open(model, intraOpThreads, InferenceDevice.parse("cpu"), outputName),
                    model,
                    intraOpThreads);
        } catch (OrtException | IllegalArgumentException e) {
            err.println("stoke tune: cannot open the model " + model + ": " + e.getMessage());
            return null;
        }
    }
}
