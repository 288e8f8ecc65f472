package io.stoke.gpu;

/**
 * Where a {@link GpuDecodeStage}'s decode thread spent its wall time, summed over the batches so far,
 * in nanoseconds. The thread does one batch at a time, so these show what bounds the stage: the
 * readers, the consumer, nvJPEG's host side, or the CPU's part of the batch.
 *
 * @param reads   waiting for a batch's files from the reader threads
 * @param buffer  waiting for a free device buffer (the consumer holds them all), for a GPU batch or,
 *     while the consumer is behind, for a whole batch of the CPU threads'
 * @param queue   starting the CPU threads' share and the next batch's reads, which first waits while
 *     the device still reads those files' buffers (an earlier batch's decode)
 * @param nvjpeg  nvJPEG's host side: each file's header (and, on the hardware engine, its stream)
 *     parsed, and the batched call that queues the decode
 * @param resize  the resize's tables drawn and its kernel queued
 * @param cpu     waiting for the reader threads' part of a GPU batch (the share, what nvJPEG left) where
 *     the decode thread could not go on (no free device buffer, its read buffers needed again, the
 *     host's tail), and for their whole batches there
 * @param handoff handing the batch to the consumer (waiting while its queue is full) and counting it
 * @param gpuSpan the span between the CUDA events recorded on the stream before nvJPEG's decode and
 *     after the resize, of the batches timed: the device's work, and the device waiting for the
 *     decode thread to queue it (the thread parses and draws tables between the two events), so it
 *     is not the device's busy time. Measured only where the CPU shares the decode
 *     ({@code --decode auto}), else 0
 * @param gpuSpanBatches how many batches {@code gpuSpan} sums
 */
public record DecodeThreadTimes(
        long reads,
        long buffer,
        long queue,
        long nvjpeg,
        long resize,
        long cpu,
        long handoff,
        long gpuSpan,
        long gpuSpanBatches) {}
