package io.stoke.cli;

import picocli.CommandLine.Option;

/** Where demo and bench deliver batches: host memory, or a GPU through the GPU stage. */
public final class DeviceOptions {
    @Option(
            names = "--device",
            paramLabel = "WHERE",
            description = {
                "host: batches stay in host memory (default); cuda[:N]: copy each batch to GPU N through the",
                "GPU stage (fails, exit code 4, when there is no CUDA driver or device); auto: the GPU when",
                "there is one, otherwise say why in one line and carry on with host batches."
            })
    String device = "host";

    @Option(
            names = "--device-normalize",
            description =
                    "With a GPU: send uint8 and normalise to float32 [n,3,C,C] on the device (4x fewer bytes on the bus).")
    boolean normalize;
}
