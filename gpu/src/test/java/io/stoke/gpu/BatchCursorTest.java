package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.sample.OrderFeed;
import io.stoke.loader.sample.Sampler;
import io.stoke.loader.testing.OrderFeedRecords;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The GPU decode stage's walk through its epochs' batches: the sampler's, or an order feed's. */
class BatchCursorTest {
    @TempDir
    Path root;

    @Test
    void theWalkStartsAtTheResumedBatchAndGivesEveryLaterEpochWholeInTheSamplersBatches() {
        Sampler sampler = new Sampler(10, 4, true, 7, false, 0, 1);
        BatchCursor at = new BatchCursor(sampler, null, 2, 1, 2, 4);
        List<String> walked = new ArrayList<>();
        List<Integer> epoch3 = new ArrayList<>();
        while (at.advance()) {
            walked.add(at.epoch + "/" + at.batch + ":" + at.start + "+" + at.size + (at.last ? " last" : ""));
            assertArrayEquals(sampler.order(at.epoch), at.order);
            assertEquals(sampler.batchSize(at.epoch, at.batch), at.size);
            for (int i = at.start; at.epoch == 3 && i < at.start + at.size; i++) {
                epoch3.add(at.order[i]);
            }
        }
        assertEquals(
                List.of("2/1:4+4", "2/2:8+2 last", "3/0:0+4", "3/1:4+4", "3/2:8+2 last"),
                walked,
                "epoch 2's batch 0 was delivered before; then two epochs in all");
        assertEquals(
                List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), epoch3.stream().sorted().toList(), "each sample once");
        assertFalse(at.advance(), "and stays at the end");
    }

    @Test
    void anOrderFeedsEpochIsAwaitedWithoutWaitingThenWalkedInItsOwnBatches() throws Exception {
        int[] sizes = {3, 1, 2};
        int[] order = {5, 0, 4, 4, 1, 3}; // a repeat, as RASampler's: the feed's order as it is
        Path file = Files.write(root.resolve("feed"), OrderFeedRecords.epochs(0, sizes, order));
        AtomicReference<OrderFeed> feed = new AtomicReference<>(); // null: not open yet
        BatchCursor at = new BatchCursor(new Sampler(6, 3, false, 0, false, 0, 1), feed::get, 0, 1, 0, 3);
        assertFalse(at.advance());
        assertTrue(at.awaiting, "no feed yet: the epoch's order is awaited, not waited for");
        try (OrderFeed open = OrderFeed.open(file, 6, 3)) {
            feed.set(open);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!at.advance()) { // the feed's own thread reads the record
                assertTrue(at.awaiting);
                assertTrue(System.nanoTime() < deadline, "the feed's record was never read");
                Thread.sleep(1);
            }
            assertEquals("0/1:3+1", at.epoch + "/" + at.batch + ":" + at.start + "+" + at.size);
            assertArrayEquals(order, at.order);
            assertTrue(at.advance());
            assertEquals(
                    "0/2:4+2 last",
                    at.epoch + "/" + at.batch + ":" + at.start + "+" + at.size + (at.last ? " last" : ""));
            assertArrayEquals(new int[] {1, 3}, Arrays.copyOfRange(at.order, at.start, at.start + at.size));
            IllegalStateException ended = assertThrows(IllegalStateException.class, at::advance);
            assertTrue(ended.getMessage().contains("epoch 1"), ended.getMessage());
        }
    }
}
