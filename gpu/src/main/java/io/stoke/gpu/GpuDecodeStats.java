package io.stoke.gpu;

/**
 * What a {@link GpuDecodeStage} has done so far.
 *
 * @param batches    batches handed out (or ready to be)
 * @param gpuImages  images nvJPEG decoded
 * @param cpuImages  images nvJPEG left to the CPU (not JPEG, CMYK, progressive on the engine ...), decoded there
 * @param sharedImages JPEGs the CPU threads decoded as their share of the work ({@code shareWithCpu})
 * @param failed     samples that could not be read or decoded
 */
public record GpuDecodeStats(long batches, long gpuImages, long cpuImages, long sharedImages, long failed) {}
