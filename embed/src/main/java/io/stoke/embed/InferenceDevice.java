package io.stoke.embed;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.io.Serializable;

/** Where a model runs: the CPU, or CUDA device N through ONNX Runtime's CUDA execution provider. */
public record InferenceDevice(boolean cuda, int index) implements Serializable {
    public static final InferenceDevice CPU = new InferenceDevice(false, 0);

    /** {@code cpu}, {@code cuda} or {@code cuda:N}. */
    public static InferenceDevice parse(String s) {
        if (s.equals("cpu")) {
            return CPU;
        }
        if (s.equals("cuda")) {
            return new InferenceDevice(true, 0);
        }
        if (s.startsWith("cuda:")) {
            try {
                int n = Integer.parseInt(s.substring(5));
                if (n >= 0) {
                    return new InferenceDevice(true, n);
                }
            } catch (NumberFormatException e) {
                // below
            }
        }
        throw new IllegalArgumentException("--device must be cpu, cuda or cuda:N, not " + s);
    }

    void configure(OrtSession.SessionOptions options) throws OrtException {
        if (cuda) {
            // Throws where the ONNX Runtime package has no CUDA provider (the CPU artifact); the
            // caller says which package to build with.
            options.addCUDA(index);
        }
    }

    @Override
    public String toString() {
        return cuda ? "cuda:" + index : "cpu";
    }
}
