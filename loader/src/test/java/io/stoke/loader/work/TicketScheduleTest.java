package io.stoke.loader.work;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The ticket schedule against the walk it stands for, written out with nested loops: epochs, then
 * their batches, then the batch's positions, from the start batch of a shorter first epoch on.
 */
class TicketScheduleTest {
    /** (epoch, position in epoch, batch in epoch, position in batch, sequence) of every sample, in order. */
    private static List<String> walk(
            long startEpoch, int startBatch, int epochs, int batchSize, int perEpoch, int firstEpoch) {
        List<String> out = new ArrayList<>();
        long sequence = startBatch;
        for (int e = 0; e < epochs; e++) {
            int samples = e == 0 ? firstEpoch : perEpoch;
            int batches = (samples + batchSize - 1) / batchSize;
            for (int b = e == 0 ? startBatch : 0; b < batches; b++, sequence++) {
                for (int j = 0; j < batchSize && b * batchSize + j < samples; j++) {
                    out.add((startEpoch + e) + " " + (b * batchSize + j) + " " + b + " " + j + " " + sequence);
                }
            }
        }
        return out;
    }

    private static List<String> located(TicketSchedule s) {
        List<String> out = new ArrayList<>();
        TicketSchedule.Ticket at = new TicketSchedule.Ticket();
        for (long t = s.firstTicket(); t < s.totalTickets; t++) {
            s.locate(t, at);
            out.add(at.epoch + " " + at.position + " " + at.batchIndex + " " + at.positionInBatch + " " + at.sequence);
        }
        return out;
    }

    @Test
    void ticketsWalkEpochsBatchesAndPositionsInOrder() {
        // Batches of 4; epochs of 10 samples (3 batches, the last of 2); a resumed first epoch of 7.
        TicketSchedule s = new TicketSchedule(5, 1, 3, 4, 10, 3, 7, 2);
        List<String> expected = walk(5, 1, 3, 4, 10, 7);
        assertEquals(expected, located(s));
        assertEquals(1, s.firstSequence);
        assertEquals(2 + 2 * 3, s.totalBatches);
        assertEquals(7 + 2 * 10, s.totalTickets);
        assertEquals(4, s.firstTicket());
    }

    @Test
    void wholeEpochsFromTheFirstBatch() {
        TicketSchedule s = new TicketSchedule(0, 0, 4, 3, 9, 3, 9, 3);
        assertEquals(walk(0, 0, 4, 3, 9, 9), located(s));
    }

    @Test
    void noEndLocatesFarTickets() {
        TicketSchedule s = new TicketSchedule(2, 0, 0, 4, 10, 3, 10, 3);
        assertEquals(Long.MAX_VALUE, s.totalTickets);
        assertEquals(Long.MAX_VALUE, s.totalBatches);
        TicketSchedule.Ticket at = new TicketSchedule.Ticket();
        // Ticket 1_000_000_005: epoch 100_000_000 past the start, its 6th sample (batch 1, position 1).
        s.locate(1_000_000_005L, at);
        assertEquals(2 + 100_000_000L, at.epoch);
        assertEquals(5, at.position);
        assertEquals(1, at.batchIndex);
        assertEquals(1, at.positionInBatch);
        assertEquals(100_000_000L * 3 + 1, at.sequence);
    }

    @Test
    void refusesAStartOutsideTheFirstEpoch() {
        IllegalArgumentException past =
                assertThrows(IllegalArgumentException.class, () -> new TicketSchedule(0, 3, 1, 4, 10, 3, 10, 3));
        assertTrue(past.getMessage().contains("start batch 3 is outside the epoch's 3 batches"), past.getMessage());
        IllegalArgumentException empty =
                assertThrows(IllegalArgumentException.class, () -> new TicketSchedule(4, 0, 1, 4, 10, 3, 0, 0));
        assertTrue(empty.getMessage().contains("resumed epoch 4 has no batch left"), empty.getMessage());
    }
}
