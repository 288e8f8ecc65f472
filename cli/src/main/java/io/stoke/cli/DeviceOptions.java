package io.stoke.cli;

import java.util.Locale;
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

    @Option(
            names = "--decode",
            paramLabel = "WHERE",
            description = {
                "cpu: Stoke's CPU workers decode (default). gpu (EXPERIMENTAL): nvJPEG decodes the JPEGs on GPU",
                "N of --device cuda:N (0 otherwise) into device batches, resized and cropped there (the eval",
                "transform, or the training crop and flip); CPU threads (--workers) read the files and decode",
                "what nvJPEG does not take (PNG, WebP, CMYK ...). auto (EXPERIMENTAL): as gpu, and the CPU threads",
                "also decode a share of the JPEGs, balanced live so both sides finish each batch together. Not yet",
                "with --augment or --erasing. Where it cannot (no libnvjpeg, no GPU) it says why in one line and",
                "decodes on the CPU."
            })
    Decode decode = Decode.CPU;

    /** Where JPEGs are decoded. */
    enum Decode {
        CPU,
        GPU,
        AUTO
    }

    /** Whether {@code --decode gpu} or {@code auto} was asked for. */
    boolean decodesOnGpu() {
        return decode != Decode.CPU;
    }

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
