package io.stoke.cli;

import ai.onnxruntime.OrtException;
import io.stoke.embed.EmbeddingJob;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

/**
 * Embeds each batch where it lies ({@code onDevice}) or, where that is refused at the first batch,
 * through the host ({@code viaHost}) from then on, said once to {@code say} with the refusal's words.
 * A refusal after a first batch that worked is thrown: the device path ran, so something broke, and
 * a quiet switch would hide it.
 *
 * <p>One consumer, one batch at a time (the embedding job's thread): the state is plain fields.
 */
final class OnDeviceOrHost<B> implements EmbeddingJob.Inference<B> {
    private enum State {
        FIRST,
        ON_DEVICE,
        VIA_HOST
    }

    private final EmbeddingJob.Inference<B> onDevice;
    private final EmbeddingJob.Inference<B> viaHost;
    private final Consumer<String> say;
    private State state = State.FIRST;

    /**
     * @param onDevice the batch read in device memory; an {@link IllegalStateException} is its refusal
     * @param viaHost the batch copied to the host first
     * @param say takes the one line said when the first batch is refused, given the refusal's message
     */
    OnDeviceOrHost(EmbeddingJob.Inference<B> onDevice, EmbeddingJob.Inference<B> viaHost, Consumer<String> say) {
        this.onDevice = onDevice;
        this.viaHost = viaHost;
        this.say = say;
    }

    @Override
    public MemorySegment embed(B batch) throws OrtException {
        if (state == State.VIA_HOST) {
            return viaHost.embed(batch);
        }
        try {
            MemorySegment rows = onDevice.embed(batch);
            state = State.ON_DEVICE;
            return rows;
        } catch (IllegalStateException e) {
            if (state != State.FIRST) {
                throw e;
            }
            state = State.VIA_HOST;
            say.accept(e.getMessage());
            return viaHost.embed(batch);
        }
    }
}
