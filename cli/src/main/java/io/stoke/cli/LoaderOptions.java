package io.stoke.cli;

import io.stoke.loader.ErrorPolicy;
import io.stoke.loader.Loader;
import io.stoke.loader.source.SampleIndex;
import io.stoke.loader.transform.TransformSpec;
import picocli.CommandLine.Option;

/** The loader's options, spelled as PyTorch users expect; shared by demo, bench and serve. */
public final class LoaderOptions {
    @Option(names = "--workers", paramLabel = "N",
            description = "Decoding threads (default: the number of cores, ${DEFAULT-VALUE}).")
    int workers = Runtime.getRuntime().availableProcessors();

    @Option(names = "--batch-size", paramLabel = "N", description = "Samples per batch (default: ${DEFAULT-VALUE}).")
    int batchSize = 256;

    @Option(names = "--epochs", paramLabel = "N", description = "Epochs to run (default: ${DEFAULT-VALUE}).")
    int epochs = 1;

    @Option(names = "--shuffle", negatable = true,
            description = "Shuffle each epoch with --seed (default: off, dataset order).")
    boolean shuffle;

    @Option(names = "--seed", paramLabel = "S", description = "Shuffle seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--drop-last", description = "Drop each epoch's last partial batch.")
    boolean dropLast;

    @Option(names = "--resize", paramLabel = "S",
            description = "Resize the shorter side to S with an antialiased bilinear filter, as torchvision's Resize(S) (default: ${DEFAULT-VALUE}).")
    int resize = 256;

    @Option(names = "--crop", paramLabel = "C", description = "Center crop C x C, as torchvision's CenterCrop(C) (default: ${DEFAULT-VALUE}).")
    int crop = 224;

    @Option(names = "--output", paramLabel = "TYPE",
            description = "uint8: [n,C,C,3] bytes, channels last; float32: [n,3,C,C] normalised with ImageNet's mean and std (default: ${DEFAULT-VALUE}).")
    String output = "uint8";

    @Option(names = "--on-error", paramLabel = "POLICY",
            description = "fail: a batch holding an undecodable file fails (exit code 1); skip: zero the sample, report it, go on (default: ${DEFAULT-VALUE}).")
    String onError = "fail";

    @Option(names = "--slots", paramLabel = "N",
            description = "Ring slots: batches decoded ahead plus those held (default: ${DEFAULT-VALUE}).")
    int slots = 4;

    @Option(names = "--dct-scaling", paramLabel = "MODE",
            description = "Let libjpeg-turbo decode at a smaller scale when the image is far larger than the resize target: "
                    + "none (pixels identical to torchvision), pow2 (1/2, 1/4, 1/8), all (any M/8) (default: ${DEFAULT-VALUE}).")
    String dctScaling = "pow2";

    @Option(names = "--max-pixels", paramLabel = "N",
            description = "Refuse JPEGs whose header claims more than N pixels (decompression bombs) (default: ${DEFAULT-VALUE}).")
    long maxPixels = 36_000_000L;

    @Option(names = "--device", paramLabel = "WHERE",
            description = {"host: batches stay in host memory (default); cuda[:N]: copy each batch to GPU N through the",
                    "GPU stage (fails, exit code 3, when there is no CUDA driver or device); auto: the GPU when",
                    "there is one, otherwise say why in one line and carry on with host batches."})
    String device = "host";

    @Option(names = "--device-normalize",
            description = "With a GPU: send uint8 and normalise to float32 [n,3,C,C] on the device (4x fewer bytes on the bus).")
    boolean deviceNormalize;

    TransformSpec transform() {
        TransformSpec.Output out = switch (output.toLowerCase(java.util.Locale.ROOT)) {
            case "uint8" -> TransformSpec.Output.UINT8_HWC;
            case "float32" -> TransformSpec.Output.FLOAT32_CHW;
            default -> throw new IllegalArgumentException("--output must be uint8 or float32, not " + output);
        };
        TransformSpec.DctScaling scaling = switch (dctScaling.toLowerCase(java.util.Locale.ROOT)) {
            case "none" -> TransformSpec.DctScaling.NONE;
            case "pow2" -> TransformSpec.DctScaling.POWERS_OF_TWO;
            case "all" -> TransformSpec.DctScaling.ALL;
            default -> throw new IllegalArgumentException("--dct-scaling must be none, pow2 or all, not " + dctScaling);
        };
        return TransformSpec.defaults().withResize(resize, crop).withOutput(out).withDctScaling(scaling)
                .withMaxPixels(maxPixels);
    }

    ErrorPolicy policy() {
        return switch (onError.toLowerCase(java.util.Locale.ROOT)) {
            case "fail" -> ErrorPolicy.FAIL;
            case "skip" -> ErrorPolicy.SKIP;
            default -> throw new IllegalArgumentException("--on-error must be fail or skip, not " + onError);
        };
    }

    Loader.Builder builder(SampleIndex index) {
        if (workers < 1 || batchSize < 1 || epochs < 1 || slots < 1) {
            throw new IllegalArgumentException("--workers, --batch-size, --epochs and --slots must be positive");
        }
        return Loader.builder(index).workers(workers).batchSize(batchSize).epochs(epochs).shuffle(shuffle).seed(seed)
                .dropLast(dropLast).transform(transform()).onError(policy()).slots(slots);
    }
}
