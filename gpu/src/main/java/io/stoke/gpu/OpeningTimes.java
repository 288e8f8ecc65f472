package io.stoke.gpu;

/**
 * How long a {@link GpuDecodeStage} took to open, phase by phase, in nanoseconds of wall time: what
 * its first batch waits for before any file is read. On one H200 a GPU stage's first batch came
 * 1.0-1.3 s after the start, against 0.1 s for the CPU path (docs/benchmarks/results-gpu-decode),
 * and these phases say which part of that a start on the CPU would have to hide.
 *
 * @param context   the device's primary context retained and made current (the driver's start, the
 *     first time in a process)
 * @param kernels   the stream and the module of Stoke's kernels loaded (the driver compiles the PTX for
 *     the device then, where its cache does not hold it)
 * @param buffers   the pool's device buffers, events and pinned host memory allocated, and the reader
 *     threads started
 * @param nvjpeg    nvJPEG's handle, state and batched decoder made on the decode thread (on the hardware
 *     engine, the engine's own)
 * @param examiners one examiner per reader thread, and each thread's context made current
 * @param resize    the resize's pinned staging and device tables allocated
 * @param wholeMeanwhile under {@code auto} with whole batches ({@link GpuDecodeStage.Builder#cpuBatches}
 *     above 0), nvJPEG opens on a thread of its own after the buffers, and the constructor returns
 *     then: the batches dispatched whole to the CPU threads meanwhile, handed out in order before
 *     the GPU's first; 0 otherwise
 */
public record OpeningTimes(
        long context, long kernels, long buffers, long nvjpeg, long examiners, long resize, long wholeMeanwhile) {
    /**
     * The phases' sum: from the context's retain until the GPU can decode (the constructor's return,
     * but where nvJPEG opens aside, after it).
     */
    public long total() {
        return context + kernels + buffers + nvjpeg + examiners + resize;
    }
}
