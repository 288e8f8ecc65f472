package io.stoke.ring;

/**
 * The producer of a shared-memory ring is gone (its process exited without finishing, or its
 * heartbeat stopped), or it reported a failure: no further batch will come.
 */
public final class ProducerGoneException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public ProducerGoneException(String message) {
        super(message);
    }
}
