package io.stoke.loader;

import static io.stoke.ring.RingLayout.DTYPE_UINT8;
import static io.stoke.ring.RingLayout.LAYOUT_HWC;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.error.SampleStatus;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.junit.jupiter.api.Test;

/** {@link Batch#ofSlot}: the face for a producer that fills its own ring's slots. */
class BatchTest {
    private static final RingGeometry G = new RingGeometry(2, 4, DTYPE_UINT8, LAYOUT_HWC, 6, 5, 3);

    @Test
    void aSlotTheCallerFilledReadsBackAndIsReleasedOnce() {
        try (SlotRing ring = SlotRing.allocate(G)) {
            int slot = ring.acquire(NoOpIdleStrategy.INSTANCE, () -> true);
            MemorySegment memory = ring.slot(slot);
            new SlotHeader().wrap(memory).sequence(7).epoch(2).batchIndex(3).sampleCount(3);
            MemorySegment px = ring.pixels(slot);
            for (long o = 0; o < 3L * G.sampleBytes(); o++) {
                px.set(JAVA_BYTE, o, (byte) (o * 31));
            }
            MemorySegment labels = memory.asSlice(G.slotLabelsOffset());
            MemorySegment indices = memory.asSlice(G.slotIndicesOffset());
            MemorySegment status = memory.asSlice(G.slotStatusOffset());
            for (int i = 0; i < 3; i++) {
                labels.setAtIndex(JAVA_INT, i, 10 + i);
                indices.setAtIndex(JAVA_LONG, i, 100 + i);
            }
            status.setAtIndex(JAVA_INT, 1, SampleStatus.CORRUPT.code());

            List<Integer> released = new ArrayList<>();
            Batch batch = Batch.ofSlot(ring, slot, released::add);
            assertEquals(3, batch.size());
            assertEquals(2, batch.epoch());
            assertEquals(3, batch.batchIndex());
            assertEquals(7, batch.sequence());
            assertArrayEquals(new long[] {3, 6, 5, 3}, batch.shape());
            assertEquals(12, batch.label(2));
            assertEquals(101, batch.index(1));
            assertEquals((byte) (G.sampleBytes() * 31), batch.sample(1).get(JAVA_BYTE, 0));
            assertEquals(SampleStatus.CORRUPT, batch.status(1));
            assertEquals(1, batch.skipped().size());
            assertEquals(101, batch.skipped().get(0).sample());
            assertTrue(released.isEmpty());
            batch.close();
            batch.close();
            assertEquals(List.of(slot), released);
            assertThrows(IllegalStateException.class, batch::pixels);
        }
    }

    @Test
    void aHeaderClaimingMoreSamplesThanASlotHoldsIsRefused() {
        try (SlotRing ring = SlotRing.allocate(G)) {
            int slot = ring.acquire(NoOpIdleStrategy.INSTANCE, () -> true);
            new SlotHeader().wrap(ring.slot(slot)).sampleCount(G.samplesPerSlot() + 1);
            List<Integer> released = new ArrayList<>();
            IllegalStateException e =
                    assertThrows(IllegalStateException.class, () -> Batch.ofSlot(ring, slot, released::add));
            assertTrue(e.getMessage().contains("claims 5 samples, capacity 4"), e.getMessage());
        }
    }
}
