package io.stoke.cli;

import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * Where demo and bench deliver batches: host memory, or a GPU through the GPU stage. Where they are
 * decoded is the loader option {@code --decode} ({@link LoaderOptions#decode()}).
 */
public final class DeviceOptions {
    @Option(
            names = "--device",
            paramLabel = "WHERE",
            description = {
                "host: batches stay in host memory (default); cuda[:N]: copy each batch to GPU N through the "
                        + "GPU stage (fails, exit code 4, when there is no CUDA driver or device); auto: the GPU when "
                        + "there is one, otherwise say why in one line and carry on with host batches."
            })
    String device = "host";

    @Option(
            names = "--device-normalize",
            description =
                    "With a GPU: send uint8 and normalise to float32 [n,3,C,C] on the device (4x fewer bytes on the bus).")
    boolean normalize;

    /** The CUDA device {@code --device} names: N of cuda:N, else 0 (host, auto, cuda). */
    int ordinal() {
        return ordinalOf(device);
    }

    /** {@link #ordinal()} of a {@code --device} value, the one place it is read. */
    static int ordinalOf(String device) {
        String d = device.toLowerCase(Locale.ROOT);
        if (d.equals("host") || d.equals("auto") || d.equals("cuda")) {
            return 0;
        }
        if (d.startsWith("cuda:")) {
            try {
                int n = Integer.parseInt(d.substring(5));
                if (n >= 0) {
                    return n;
                }
            } catch (NumberFormatException e) {
                // said below
            }
        }
        throw new IllegalArgumentException("--device must be host, auto, cuda or cuda:N, not " + device);
    }
}
