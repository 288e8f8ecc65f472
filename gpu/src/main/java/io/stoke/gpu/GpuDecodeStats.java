package io.stoke.gpu;

/**
 * What a {@link GpuDecodeStage} has done so far, counting every batch decoded, delivered or (under
 * {@code ErrorPolicy.FAIL}) rejected.
 *
 * @param batches    batches handed out (or ready to be)
 * @param gpuImages  images nvJPEG decoded
 * @param cpuImages  images nvJPEG left to the CPU (not JPEG, CMYK, progressive on the engine ...), tried there
 *     (those that failed there are in {@code failed} too)
 * @param sharedImages JPEGs the CPU threads decoded as their share of the work ({@code shareWithCpu})
 * @param failed     samples that could not be read or decoded
 * @param times      where the decode thread's wall time went
 */
public record GpuDecodeStats(
        long batches, long gpuImages, long cpuImages, long sharedImages, long failed, DecodeThreadTimes times) {}
