package io.stoke.ffm.cuda;

/**
 * An nvJPEG call returned something other than {@code NVJPEG_STATUS_SUCCESS}. The message names the
 * function and the status.
 */
public final class NvjpegException extends RuntimeException {
    private final String call;
    private final int status;

    public NvjpegException(String call, int status, String statusName) {
        super(call + " failed: " + statusName + " (" + status + ")");
        this.call = call;
        this.status = status;
    }

    /** The nvJPEG function that failed, e.g. {@code nvjpegDecodeBatched}. */
    public String call() {
        return call;
    }

    /** The {@code nvjpegStatus_t}. */
    public int status() {
        return status;
    }
}
