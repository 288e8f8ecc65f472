package io.stoke.loader.work;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.sample.OrderFeed;
import io.stoke.loader.testing.OrderFeedRecords;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.YieldingIdleStrategy;
import org.junit.jupiter.api.Test;

/**
 * The schedule of epochs given through an {@link OrderFeed}: epochs of their own lengths and batch
 * sizes, located against the walk written out by hand, a worker waiting for an epoch not yet fed,
 * and a record that breaks the format refused naming the epoch and the value.
 */
class FedScheduleTest {
    /** One epoch's record as the Python side writes it: little-endian int64s. */
    private static byte[] record(long epoch, int[] batchSizes, int[] indices) {
        return OrderFeedRecords.record(epoch, batchSizes, indices);
    }

    private static List<String> locate(TicketSchedule s, long tickets) {
        List<String> out = new ArrayList<>();
        TicketSchedule.Ticket at = new TicketSchedule.Ticket();
        for (long t = s.firstTicket(); t < s.firstTicket() + tickets; t++) {
            assertTrue(s.locate(t, at, () -> true, new BusySpinIdleStrategy()));
            out.add(at.epoch + " " + at.position + " " + at.batchIndex + " " + at.positionInBatch + " " + at.sequence
                    + " " + at.order[at.position] + " " + at.batchLength + (at.lastBatch ? " last" : ""));
        }
        return out;
    }

    @Test
    void epochsOfTheirOwnBatchSizesFromAStartBatch() throws IOException {
        ByteArrayOutputStream feed = new ByteArrayOutputStream();
        feed.write(record(3, new int[] {2, 3, 1}, new int[] {9, 8, 7, 6, 5, 4}));
        feed.write(record(4, new int[] {}, new int[] {})); // a sampler may give an empty epoch
        feed.write(record(5, new int[] {3, 3}, new int[] {0, 0, 1, 2, 2, 2}));
        try (OrderFeed f = new OrderFeed(new ByteArrayInputStream(feed.toByteArray()), "test feed", 10, 3)) {
            TicketSchedule s = TicketSchedule.fed(f, 3, 1, 0, 3);
            assertEquals(1, s.firstSequence);
            assertEquals(
                    List.of(
                            "3 2 1 0 1 7 3",
                            "3 3 1 1 1 6 3",
                            "3 4 1 2 1 5 3",
                            "3 5 2 0 2 4 1 last",
                            "5 0 0 0 3 0 3",
                            "5 1 0 1 3 0 3",
                            "5 2 0 2 3 1 3",
                            "5 3 1 0 4 2 3 last",
                            "5 4 1 1 4 2 3 last",
                            "5 5 1 2 4 2 3 last"),
                    locate(s, 10));
        }
    }

    @Test
    void aWorkerWaitsForAnEpochNotYetFedAndStopsWhenTheRunDoes() throws Exception {
        PipedOutputStream writer = new PipedOutputStream();
        try (OrderFeed f = new OrderFeed(new PipedInputStream(writer, 1 << 16), "test pipe", 4, 2)) {
            TicketSchedule s = TicketSchedule.fed(f, 0, 0, 0, 2);
            writer.write(record(0, new int[] {2, 2}, new int[] {3, 2, 1, 0}));
            writer.flush();
            TicketSchedule.Ticket at = new TicketSchedule.Ticket();
            assertTrue(s.locate(3, at, () -> true, new YieldingIdleStrategy()));
            assertFalse(f.awaited(), "epoch 0 given and none other asked for");
            assertEquals(0, at.order[at.position]);
            AtomicBoolean running = new AtomicBoolean(true);
            AtomicBoolean located = new AtomicBoolean();
            Thread worker = Thread.ofPlatform()
                    .start(() -> located.set(
                            s.locate(4, new TicketSchedule.Ticket(), running::get, new YieldingIdleStrategy())));
            worker.join(200);
            assertTrue(worker.isAlive(), "epoch 1 is not fed yet: the worker must wait for it");
            assertTrue(f.awaited(), "a worker waits for an epoch the feed has not given (no stall report)");
            running.set(false);
            worker.join(5_000);
            assertFalse(worker.isAlive());
            assertFalse(located.get(), "a stopped run ends the wait without a ticket");
            writer.write(record(1, new int[] {1}, new int[] {2}));
            writer.flush();
            assertTrue(s.locate(4, at, () -> true, new YieldingIdleStrategy()));
            assertFalse(f.awaited(), "epoch 1 given: nothing awaited");
            assertEquals(1, at.epoch);
            assertEquals(2, at.order[at.position]);
            assertTrue(at.lastBatch);
        }
    }

    /** The loader's schedule and the GPU stage start a fed epoch by one rule, in one sentence. */
    @Test
    void aStartBatchOutsideTheFedEpochIsRefusedAndItsEndOnlyInAnEpochOfNone() {
        OrderFeed.GivenEpoch three = new OrderFeed.GivenEpoch(4, new int[] {0, 1, 2, 3, 4}, new int[] {0, 2, 4, 5});
        for (int start = 0; start < 3; start++) {
            three.checkStartBatch(start);
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> three.checkStartBatch(3));
        assertEquals("start batch 3 is outside epoch 4's 3 batches in the order fed", e.getMessage());
        assertThrows(IllegalStateException.class, () -> three.checkStartBatch(5));
        OrderFeed.GivenEpoch none = new OrderFeed.GivenEpoch(7, new int[0], new int[] {0});
        none.checkStartBatch(0);
        assertThrows(IllegalStateException.class, () -> none.checkStartBatch(1));
    }

    @Test
    void aRecordThatBreaksTheFormatIsRefusedNamingTheEpochAndTheValue() {
        String index = refusal(record(0, new int[] {2}, new int[] {1, 10}), 10, 2);
        assertEquals("test feed: epoch 0's order position 1 is index 10, outside the dataset's 10 samples", index);
        String size = refusal(record(0, new int[] {3}, new int[] {1, 2, 3}), 10, 2);
        assertEquals("test feed: epoch 0's order batch 0 holds 3 samples; a batch holds 1 to 2", size);
        ByteArrayOutputStream skip = new ByteArrayOutputStream();
        skip.writeBytes(record(0, new int[] {1}, new int[] {1}));
        skip.writeBytes(record(2, new int[] {1}, new int[] {1}));
        TicketSchedule s = TicketSchedule.fed(
                new OrderFeed(new ByteArrayInputStream(skip.toByteArray()), "test feed", 10, 2), 0, 0, 0, 2);
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> s.locate(1, new TicketSchedule.Ticket(), () -> true, new YieldingIdleStrategy()));
        assertEquals(
                "test feed: epoch 2's order came where epoch 1 was due: epochs are fed in order, one record each",
                e.getMessage());
    }

    private static String refusal(byte[] feed, int datasetSize, int batchSize) {
        TicketSchedule s = TicketSchedule.fed(
                new OrderFeed(new ByteArrayInputStream(feed), "test feed", datasetSize, batchSize), 0, 0, 0, batchSize);
        return assertThrows(
                        IllegalStateException.class,
                        () -> s.locate(0, new TicketSchedule.Ticket(), () -> true, new YieldingIdleStrategy()))
                .getMessage();
    }
}
