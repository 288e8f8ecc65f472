package io.stoke.gpu;

/**
 * Where a {@link GpuDecodeStage}'s reader threads spent their wall time on the GPU's batches, summed
 * over the threads and the batches so far, in nanoseconds: the work the stage moved off its decode
 * thread and onto them, beside the CPU's decodes (whose cost the split measures itself).
 *
 * @param images  the files read for the GPU's batches
 * @param read    reading them (the source's read, and the copy into the batch's buffer; a remote or
 *     cold source's waits too) and checking what each is
 * @param examine nvJPEG's header read of each JPEG (and, on the hardware engine, its stream parse and
 *     support check)
 * @param tables  the training transform's resize tables drawn for each JPEG nvJPEG takes (0 under
 *     the evaluation transform, whose tables the decode thread keeps by size)
 */
public record ReaderTimes(long images, long read, long examine, long tables) {}
