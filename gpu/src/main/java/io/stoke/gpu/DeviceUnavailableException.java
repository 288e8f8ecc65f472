package io.stoke.gpu;

/**
 * No CUDA device can be used: no driver library ({@code libcuda.so.1}), or a driver without a
 * device. The message is one sentence for the user; a caller that can run without a GPU catches
 * this and carries on with host batches.
 */
public final class DeviceUnavailableException extends RuntimeException {
    public DeviceUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
