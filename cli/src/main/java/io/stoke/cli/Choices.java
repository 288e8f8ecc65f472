package io.stoke.cli;

import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.sample.Sampler.PartitionTail;
import io.stoke.loader.transform.TransformSpec;

/**
 * The values of the options that take one of a few words, spelled as on the command line: picocli
 * converts them (in any case, see {@link Main}), lists them in the help and names them in its
 * error, and each maps to the loader's own value.
 */
final class Choices {
    private Choices() {}

    /** {@code --output}. */
    enum Output {
        uint8(TransformSpec.Output.UINT8_HWC),
        float32(TransformSpec.Output.FLOAT32_CHW);

        final TransformSpec.Output value;

        Output(TransformSpec.Output value) {
            this.value = value;
        }
    }

    /** {@code --dct-scaling}. */
    enum DctScaling {
        none(TransformSpec.DctScaling.NONE),
        pow2(TransformSpec.DctScaling.POWERS_OF_TWO),
        all(TransformSpec.DctScaling.ALL);

        final TransformSpec.DctScaling value;

        DctScaling(TransformSpec.DctScaling value) {
            this.value = value;
        }
    }

    /** {@code stoke embed --format}. */
    enum EmbedFormat {
        npy,
        parquet
    }

    /** {@code --transform}. */
    enum Transform {
        eval,
        train
    }

    /** {@code --on-error}. */
    enum OnError {
        fail(ErrorPolicy.FAIL),
        skip(ErrorPolicy.SKIP);

        final ErrorPolicy value;

        OnError(ErrorPolicy value) {
            this.value = value;
        }
    }

    /** {@code --shard-tail}. */
    enum Tail {
        pad(PartitionTail.PAD),
        drop(PartitionTail.DROP);

        final PartitionTail value;

        Tail(PartitionTail value) {
            this.value = value;
        }
    }

    /** {@code stoke pack --format}. */
    enum PackFormat {
        jpeg,
        png,
        raw
    }
}
