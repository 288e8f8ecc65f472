package io.stoke.gpu;

/**
 * What a {@link GpuDecodeStage} has done so far, counting every batch decoded, delivered or (under
 * {@code ErrorPolicy.FAIL}) rejected.
 *
 * @param batches    batches handed out (or ready to be)
 * @param gpuImages  images nvJPEG decoded
 * @param cpuImages  images nvJPEG left to the CPU (not JPEG, CMYK, progressive on the engine ...), tried there
 *     (those that failed there are in {@code failed} too)
 * @param sharedImages images the CPU threads decoded as their share of the work ({@code shareWithCpu}): JPEGs of
 *     the GPU's batches, and every image of their whole batches that decoded
 * @param failed     samples that could not be read or decoded
 * @param times      where the decode thread's wall time went
 * @param readers    where the reader threads' wall time on the GPU's batches went (reads, nvJPEG's
 *     examination, the training tables)
 * @param opening    how long the stage took to open, phase by phase
 * @param balance    with the CPU sharing the decode, the rates its split is drawn from; else null
 * @param cpuBatches whole batches the CPU threads decoded beside the GPU's (their images are in
 *     {@code sharedImages}, or {@code failed})
 * @param behindBatches of those, the ones given them because batches waited for the consumer (the
 *     GPU then left to the consumer's own work)
 */
public record GpuDecodeStats(
        long batches,
        long gpuImages,
        long cpuImages,
        long sharedImages,
        long failed,
        DecodeThreadTimes times,
        ReaderTimes readers,
        OpeningTimes opening,
        Balance balance,
        long cpuBatches,
        long behindBatches) {
    /**
     * The smoothed times per image that {@code --decode auto} splits each batch by (NaN until measured).
     *
     * @param gpuSpanNanos   the span of the CUDA events around the GPU side, per image nvJPEG decodes
     *     ({@link DecodeThreadTimes#gpuSpan}: the device's work and its waits for the decode thread)
     * @param gpuHostNanos   the decode thread's own time for it (nvJPEG's host side, the resize's tables)
     * @param cpuNanos       the CPU threads' round, wall time per image, all threads together (what
     *     nvJPEG leaves and the share; a round ends when its last file does)
     * @param cpuThreadNanosPerKiB a CPU thread's busy time per KiB of a round's estimated cost (a
     *     file's bytes, three times over for one nvJPEG's examination refused): what the split
     *     foresees a round from
     * @param cpuWholeNanos  the CPU threads' wall time per image of a whole batch, all threads together
     *     (from its start, or the previous whole batch's end, to its last image's end)
     */
    public record Balance(
            double gpuSpanNanos,
            double gpuHostNanos,
            double cpuNanos,
            double cpuThreadNanosPerKiB,
            double cpuWholeNanos) {}
}
