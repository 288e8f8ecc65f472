package io.stoke.loader.work;

import io.stoke.loader.sample.Sampler;

/**
 * Which sample a ticket is: tickets count every sample the pipeline produces, in epoch order, from
 * the start batch on, and a ticket's epoch, batch and position follow from its number alone. Pure:
 * no threads, no memory; one immutable schedule shared by every worker, each of which locates its
 * tickets into a {@link Ticket} of its own (no allocation per sample).
 *
 * <p>Sequence numbers count batches from batch 0 of the start epoch, so a run resumed at batch
 * {@code b} starts at sequence {@code b}. The first epoch may be shorter than the others: when it
 * is the sampler's resumed epoch, it holds only what earlier worlds left of it.
 */
final class TicketSchedule {
    final long startEpoch;
    final int batchSize;
    final int samplesPerEpoch;
    final int batchesPerEpoch;
    final int firstEpochSamples;
    final int firstEpochBatches;
    final long firstSequence;
    /** Tickets in all ({@link Long#MAX_VALUE} for no end), the first one's number included. */
    final long totalTickets;
    /** Sequence numbers in all ({@link Long#MAX_VALUE} for no end): one past the last batch's. */
    final long totalBatches;

    /** Where one ticket falls; one per worker, overwritten by every {@link #locate}. */
    static final class Ticket {
        long epoch;
        /** Position in the epoch's order. */
        int position;
        /** The batch's number within its epoch. */
        int batchIndex;
        /** Position within the batch. */
        int positionInBatch;
        /** The batch's sequence number. */
        long sequence;
    }

    /**
     * @param startEpoch        the epoch to start in
     * @param startBatch        the first batch of {@code startEpoch} to produce
     * @param epochs            epochs to produce, the first one counted even when it starts past batch 0; 0 for no end
     * @param batchSize         samples per batch (an epoch's last batch may hold fewer)
     * @param samplesPerEpoch   samples in an ordinary epoch
     * @param batchesPerEpoch   batches in an ordinary epoch
     * @param firstEpochSamples samples in the first epoch (fewer when it is a resumed one)
     * @param firstEpochBatches batches in the first epoch
     */
    TicketSchedule(
            long startEpoch,
            int startBatch,
            long epochs,
            int batchSize,
            int samplesPerEpoch,
            int batchesPerEpoch,
            int firstEpochSamples,
            int firstEpochBatches) {
        if (firstEpochBatches == 0) {
            throw new IllegalArgumentException("the resumed epoch " + startEpoch
                    + " has no batch left for this world's ranks: start at the next epoch");
        }
        if (startBatch < 0 || startBatch >= firstEpochBatches) {
            throw new IllegalArgumentException(
                    "start batch " + startBatch + " is outside the epoch's " + firstEpochBatches + " batches");
        }
        this.startEpoch = startEpoch;
        this.batchSize = batchSize;
        this.samplesPerEpoch = samplesPerEpoch;
        this.batchesPerEpoch = batchesPerEpoch;
        this.firstEpochSamples = firstEpochSamples;
        this.firstEpochBatches = firstEpochBatches;
        this.firstSequence = startBatch;
        this.totalTickets = epochs <= 0
                ? Long.MAX_VALUE
                : firstEpochSamples + Math.multiplyExact(epochs - 1, (long) samplesPerEpoch);
        this.totalBatches = epochs <= 0 ? Long.MAX_VALUE : firstEpochBatches + (epochs - 1) * batchesPerEpoch;
    }

    /** The schedule of {@code sampler}'s epochs from batch {@code startBatch} of {@code startEpoch}. */
    static TicketSchedule of(Sampler sampler, long startEpoch, int startBatch, long epochs) {
        if (sampler.resumedEpoch() >= 0 && sampler.resumedEpoch() != startEpoch) {
            throw new IllegalArgumentException("the sampler resumes epoch " + sampler.resumedEpoch()
                    + " but the pipeline starts in epoch " + startEpoch);
        }
        return new TicketSchedule(
                startEpoch,
                startBatch,
                epochs,
                sampler.batchSize(),
                sampler.samplesPerEpoch(),
                sampler.batchesPerEpoch(),
                sampler.samplesPerEpoch(startEpoch),
                sampler.batchesPerEpoch(startEpoch));
    }

    /** The first ticket drawn: the start batch's first sample. */
    long firstTicket() {
        return firstSequence * batchSize;
    }

    /** Sets {@code into} to where {@code ticket} falls (below {@link #totalTickets}). */
    void locate(long ticket, Ticket into) {
        long epochOffset;
        int position;
        long firstOfEpoch; // the sequence number of the epoch's batch 0
        if (ticket < firstEpochSamples) {
            epochOffset = 0;
            position = (int) ticket;
            firstOfEpoch = 0;
        } else {
            long t = ticket - firstEpochSamples;
            epochOffset = 1 + t / samplesPerEpoch;
            position = (int) (t % samplesPerEpoch);
            firstOfEpoch = firstEpochBatches + (epochOffset - 1) * batchesPerEpoch;
        }
        int k = position / batchSize;
        into.epoch = startEpoch + epochOffset;
        into.position = position;
        into.batchIndex = k;
        into.positionInBatch = position % batchSize;
        into.sequence = firstOfEpoch + k;
    }
}
