package io.stoke.gpu;

/**
 * What a {@link GpuDecodeStage} has done so far.
 *
 * @param batches    batches handed out (or ready to be)
 * @param gpuImages  images nvJPEG decoded
 * @param cpuImages  images left to the CPU (not JPEG, CMYK, progressive on the engine ...), decoded there
 * @param failed     samples that could not be read or decoded
 */
public record GpuDecodeStats(long batches, long gpuImages, long cpuImages, long failed) {}
