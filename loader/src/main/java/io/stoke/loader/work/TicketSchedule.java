package io.stoke.loader.work;

import io.stoke.loader.sample.OrderFeed;
import io.stoke.loader.sample.OrderFeed.GivenEpoch;
import io.stoke.loader.sample.Sampler;
import java.util.function.BooleanSupplier;
import org.agrona.concurrent.IdleStrategy;

/**
 * Which sample a ticket is: tickets count every sample the pipeline produces, in epoch order, from
 * the start batch on, and a ticket's epoch, batch and position follow from its number alone. Pure:
 * no threads, no memory; one immutable schedule shared by every worker, each of which locates its
 * tickets into a {@link Ticket} of its own (no allocation per sample).
 *
 * <p>Sequence numbers count batches from batch 0 of the start epoch, so a run resumed at batch
 * {@code b} starts at sequence {@code b}. The first epoch may be shorter than the others: when it
 * is the sampler's resumed epoch, it holds only what earlier worlds left of it.
 *
 * <p>With an {@link OrderFeed} ({@link #fed}) each epoch is the order given, of its own length and
 * batch sizes: tickets count from the start batch's first sample (ticket 0), and where a ticket falls
 * is known only once its epoch's order has come, so {@link #locate(long, Ticket, BooleanSupplier,
 * IdleStrategy)} waits for it.
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
    // With an order feed: the feed, and the epochs located so far (the newest last, a few kept).
    private final OrderFeed feed;
    private final int startBatch;
    private final FedEpoch[] fedEpochs = new FedEpoch[4];
    // Set before the workers start: a worker waiting for a fed order is slack.
    WorkerSlack slack;
    private int fedCount;

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
        /** With an order feed: the epoch's order, the batch's length and whether it ends the epoch. */
        int[] order;

        int batchLength;
        boolean lastBatch;
        FedEpoch fed;
    }

    /** An epoch of the order feed, placed among the tickets: ticket {@code t} is position {@code t - ticketBase}. */
    private record FedEpoch(GivenEpoch given, long ticketBase, long endTicket, long sequenceBase) {}

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
        this.feed = null;
        this.startBatch = startBatch;
    }

    private TicketSchedule(OrderFeed feed, long startEpoch, int startBatch, int batchSize) {
        this.startEpoch = startEpoch;
        this.batchSize = batchSize;
        this.samplesPerEpoch = 0;
        this.batchesPerEpoch = 0;
        this.firstEpochSamples = 0;
        this.firstEpochBatches = 0;
        this.firstSequence = startBatch;
        this.totalTickets = Long.MAX_VALUE;
        this.totalBatches = Long.MAX_VALUE;
        this.feed = feed;
        this.startBatch = startBatch;
    }

    /**
     * The schedule of the epochs {@code feed} gives, from batch {@code startBatch} of {@code
     * startEpoch}, until stopped.
     */
    static TicketSchedule fed(OrderFeed feed, long startEpoch, int startBatch, long epochs, int batchSize) {
        if (epochs != 0) {
            throw new IllegalArgumentException(
                    "an order feed gives its epochs until stopped: epochs must be 0 (no end), not " + epochs);
        }
        if (startBatch < 0) {
            throw new IllegalArgumentException("start batch must not be negative: " + startBatch);
        }
        return new TicketSchedule(feed, startEpoch, startBatch, batchSize);
    }

    /** Whether the epochs' orders come from an order feed. */
    boolean isFed() {
        return feed != null;
    }

    /**
     * Sets {@code into} to where {@code ticket} falls, waiting for its epoch's order where it comes
     * from a feed.
     *
     * @return false when {@code running} turned false while waiting
     */
    boolean locate(long ticket, Ticket into, BooleanSupplier running, IdleStrategy idle) {
        if (feed == null) {
            locate(ticket, into);
            return true;
        }
        FedEpoch at = into.fed;
        while (at == null || ticket < at.ticketBase || ticket >= at.endTicket) {
            at = fedEpoch(ticket, running, idle);
            if (at == null) {
                return false;
            }
        }
        GivenEpoch given = at.given;
        int position = (int) (ticket - at.ticketBase);
        int k = given.batchOf(position);
        into.fed = at;
        into.order = given.indices();
        into.epoch = given.epoch();
        into.position = position;
        into.batchIndex = k;
        into.positionInBatch = position - given.batchStarts()[k];
        into.sequence = at.sequenceBase + k;
        into.batchLength = given.batchStarts()[k + 1] - given.batchStarts()[k];
        into.lastBatch = k == given.batches() - 1;
        return true;
    }

    /** The fed epoch that holds {@code ticket}, placing epochs from the feed as they come; null when stopped. */
    private FedEpoch fedEpoch(long ticket, BooleanSupplier running, IdleStrategy idle) {
        synchronized (fedEpochs) {
            while (true) {
                FedEpoch last = fedCount == 0 ? null : fedEpochs[(fedCount - 1) % fedEpochs.length];
                if (last != null && ticket < last.endTicket) {
                    for (int i = Math.max(0, fedCount - fedEpochs.length); i < fedCount; i++) {
                        FedEpoch e = fedEpochs[i % fedEpochs.length];
                        if (ticket >= e.ticketBase && ticket < e.endTicket) {
                            return e;
                        }
                    }
                    throw new IllegalStateException(
                            "ticket " + ticket + " falls in an epoch the schedule no longer keeps");
                }
                long epoch = last == null ? startEpoch : last.given.epoch() + 1;
                GivenEpoch given;
                if (slack != null) {
                    slack.waitStarts(); // no order yet: the workers have nothing to do
                }
                try {
                    given = feed.await(epoch, running, idle);
                } finally {
                    if (slack != null) {
                        slack.waitEnds();
                    }
                }
                if (given == null) {
                    return null;
                }
                FedEpoch placed;
                if (last == null) {
                    given.checkStartBatch(startBatch);
                    int skipped = given.batchStarts()[startBatch];
                    placed = new FedEpoch(given, -skipped, given.indices().length - skipped, 0);
                } else {
                    placed = new FedEpoch(
                            given,
                            last.endTicket,
                            last.endTicket + given.indices().length,
                            last.sequenceBase + last.given.batches());
                }
                fedEpochs[fedCount % fedEpochs.length] = placed;
                fedCount++;
            }
        }
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
        return feed != null ? 0 : firstSequence * batchSize;
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
