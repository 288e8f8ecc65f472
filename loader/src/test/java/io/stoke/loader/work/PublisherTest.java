package io.stoke.loader.work;

import static io.stoke.ring.RingLayout.DTYPE_UINT8;
import static io.stoke.ring.RingLayout.LAYOUT_HWC;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.junit.jupiter.api.Test;

/**
 * The publisher over a real ring, its batches finished by hand in any order: what the consumer
 * polls is every batch in sequence, each header as the batch was, and the stream's end or failure
 * after the last one.
 */
class PublisherTest {
    // Slots of 2 one-byte samples; epochs of 4 samples (2 batches); 2 epochs.
    private static final RingGeometry G = new RingGeometry(3, 2, DTYPE_UINT8, LAYOUT_HWC, 1, 1, 1);
    private static final TicketSchedule SCHEDULE = new TicketSchedule(0, 0, 2, 2, 4, 2, 4, 2);

    private final SlotHeader header = new SlotHeader();

    /** Takes a slot for batch {@code sequence}, {@code failed} of its samples failed, and one left to decode. */
    private static InFlightBatch begin(SlotRing ring, InFlightBatch[] table, long sequence, int failed) {
        int slot = ring.acquire(NoOpIdleStrategy.INSTANCE, () -> true);
        InFlightBatch batch = table[(int) (sequence % table.length)];
        batch.begin(slot, sequence / 2, (int) (sequence % 2), 2, sequence % 2 == 1);
        for (int i = 0; i < failed; i++) {
            batch.addError(new SampleError(i, (int) sequence * 10 + i, "s" + i, SampleStatus.CORRUPT, null));
        }
        batch.remaining.set(1);
        batch.sequence = sequence;
        return batch;
    }

    /** As {@link #begin}, every sample done. */
    private static void finish(SlotRing ring, InFlightBatch[] table, long sequence, int failed) {
        begin(ring, table, sequence, failed).remaining.set(0);
    }

    /** The sequence numbers the consumer finds, in order, releasing each slot. */
    private List<Long> drain(SlotRing ring) {
        List<Long> seen = new ArrayList<>();
        for (int slot = ring.pollReady(); slot >= 0; slot = ring.pollReady()) {
            seen.add(header.wrap(ring.slot(slot)).sequence());
            ring.release(slot);
        }
        return seen;
    }

    @Test
    void publishesInSequenceWhateverOrderBatchesFinishIn() {
        try (SlotRing ring = SlotRing.allocate(G)) {
            InFlightBatch[] table = InFlightBatch.table(G.slotCount());
            RunState state = new RunState(SCHEDULE.totalBatches);
            Publisher publisher = new Publisher(ring, table, true, SCHEDULE, state, null);
            finish(ring, table, 2, 0);
            finish(ring, table, 1, 1);
            publisher.publishFinished();
            assertEquals(List.of(), drain(ring), "batch 0 has no slot yet: nothing goes out");
            assertEquals(0, publisher.published());

            InFlightBatch zero = begin(ring, table, 0, 0);
            publisher.publishFinished();
            assertEquals(List.of(), drain(ring), "batch 0 has a sample left: nothing goes out");
            zero.remaining.set(0);
            publisher.publishFinished();
            int first = ring.pollReady();
            header.wrap(ring.slot(first));
            assertEquals(0, header.sequence());
            assertEquals(2, header.sampleCount());
            assertEquals(2, header.pixelBytes());
            assertFalse(header.lastInEpoch());
            ring.release(first);
            int second = ring.pollReady();
            header.wrap(ring.slot(second));
            assertEquals(1, header.sequence());
            assertEquals(1, header.skippedCount());
            assertTrue(header.lastInEpoch());
            assertFalse(header.failed(), "errors are skipped, not failures");
            assertEquals(
                    List.of(10),
                    publisher.errors(second).stream().map(SampleError::sample).toList());
            ring.release(second);
            assertEquals(List.of(2L), drain(ring));
            assertEquals(3, publisher.published());
            assertFalse(ring.ringState().endOfStream());

            finish(ring, table, 3, 0);
            publisher.publishFinished();
            assertEquals(List.of(3L), drain(ring));
            assertTrue(ring.ringState().endOfStream(), "the stream ends after the last batch");
            assertEquals(4, ring.ringState().published());
            assertTrue(state.running);
        }
    }

    @Test
    void aFailedSampleMarksItsBatchUnlessErrorsAreSkipped() {
        try (SlotRing ring = SlotRing.allocate(G)) {
            InFlightBatch[] table = InFlightBatch.table(G.slotCount());
            Publisher publisher =
                    new Publisher(ring, table, false, SCHEDULE, new RunState(SCHEDULE.totalBatches), null);
            finish(ring, table, 0, 1);
            publisher.publishFinished();
            int slot = ring.pollReady();
            assertTrue(header.wrap(ring.slot(slot)).failed());
        }
    }

    @Test
    void anEpochThatDecodedNothingEndsTheStreamAfterItsLastBatch() {
        try (SlotRing ring = SlotRing.allocate(G)) {
            InFlightBatch[] table = InFlightBatch.table(G.slotCount());
            RunState state = new RunState(SCHEDULE.totalBatches);
            Publisher publisher = new Publisher(ring, table, true, SCHEDULE, state, null);
            finish(ring, table, 0, 2);
            finish(ring, table, 1, 2);
            finish(ring, table, 2, 0);
            publisher.publishFinished();
            NoSampleDecodedException e = assertInstanceOf(NoSampleDecodedException.class, state.failure);
            assertEquals(0, e.epoch());
            assertEquals(4, e.failed());
            assertEquals(2, state.deliverable, "the consumer gets the epoch's two batches, then the exception");
            assertFalse(state.running, "workers on the next epoch stop");
            assertEquals(List.of(0L, 1L), drain(ring), "the next epoch's finished batch is never published");
            assertTrue(ring.ringState().producerFailed());
            assertFalse(ring.ringState().endOfStream());
        }
    }
}
