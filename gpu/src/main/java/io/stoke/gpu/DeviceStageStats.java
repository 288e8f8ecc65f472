package io.stoke.gpu;

/**
 * Counters of a {@link DeviceStage}.
 *
 * @param batches       batches whose copy was queued
 * @param bytesToDevice bytes sent host to device (uint8 when normalising on the device)
 * @param slotsReturned host slots handed back to the workers after their copy completed
 * @param maxOnDevice   the most batches that were on the device at once (at most K)
 */
public record DeviceStageStats(long batches, long bytesToDevice, long slotsReturned, int maxOnDevice) {}
