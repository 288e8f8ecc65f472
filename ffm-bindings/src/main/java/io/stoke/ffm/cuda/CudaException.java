package io.stoke.ffm.cuda;

/**
 * A CUDA driver call returned something other than {@code CUDA_SUCCESS}. The message names the
 * exact symbol that failed, the error's {@code CUDA_ERROR_*} name and the driver's description.
 */
public final class CudaException extends RuntimeException {
    private final String call;
    private final int result;
    private final String errorName;

    public CudaException(String call, int result, String errorName, String description) {
        super(call + " failed: " + errorName + " (" + result + "): " + description);
        this.call = call;
        this.result = result;
        this.errorName = errorName;
    }

    /** The driver symbol that failed, e.g. {@code cuMemAlloc_v2}. */
    public String call() {
        return call;
    }

    /** The {@code CUresult} code. */
    public int result() {
        return result;
    }

    /** The {@code CUDA_ERROR_*} name of {@link #result()}, as cuGetErrorName gives it. */
    public String errorName() {
        return errorName;
    }
}
