package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * The slot body flyweight against the layout as a consumer in another language finds it: the
 * body's offsets read from the ring's header (what native/stoke_ring.h and Python read, checked
 * against C by {@link ShmLayoutAgreementTest}), and every byte outside the elements written untouched.
 */
class SlotBodyTest {
    // Three samples of 2x2x3 uint8: arrays of 12, 24 and 12 bytes, each starting on a fresh cache line.
    private static final RingGeometry G = new RingGeometry(2, 3, DTYPE_UINT8, LAYOUT_HWC, 2, 2, 3);

    @Test
    void elementsLieWhereTheRingHeaderSays() {
        try (SlotRing ring = SlotRing.allocate(G)) {
            MemorySegment memory = ring.memory();
            long slot1 = memory.get(JAVA_LONG, SLOTS_OFFSET_OFFSET) + memory.get(JAVA_LONG, SLOT_STRIDE_OFFSET);
            long labels = slot1 + memory.get(JAVA_INT, SLOT_LABELS_OFFSET_OFFSET);
            long indices = slot1 + memory.get(JAVA_INT, SLOT_INDICES_OFFSET_OFFSET);
            long status = slot1 + memory.get(JAVA_INT, SLOT_STATUS_OFFSET_OFFSET);
            long pixels = slot1 + memory.get(JAVA_INT, SLOT_PIXELS_OFFSET_OFFSET);
            byte[] before = memory.toArray(JAVA_BYTE);

            SlotBody body = new SlotBody(G).wrap(ring.slot(1));
            for (int i = 0; i < 3; i++) {
                body.putLabel(i, 10 + i).putIndex(i, 5_000_000_000L + i).putStatus(i, 20 + i);
                body.pixels().set(JAVA_BYTE, body.pixelOffset(i), (byte) (30 + i));
            }

            for (int i = 0; i < 3; i++) {
                assertEquals(10 + i, memory.get(JAVA_INT, labels + 4L * i));
                assertEquals(5_000_000_000L + i, memory.get(JAVA_LONG, indices + 8L * i));
                assertEquals(20 + i, memory.get(JAVA_INT, status + 4L * i));
                assertEquals(30 + i, memory.get(JAVA_BYTE, pixels + 12L * i));
                assertEquals(10 + i, body.label(i));
                assertEquals(5_000_000_000L + i, body.index(i));
                assertEquals(20 + i, body.status(i));
                assertEquals(30 + i, body.sample(i).get(JAVA_BYTE, 0));
                assertEquals(12, body.sample(i).byteSize());
            }
            // Nothing else changed: not the header, not slot 0, not the padding between arrays.
            byte[] after = memory.toArray(JAVA_BYTE);
            int changed = 0;
            for (int b = 0; b < after.length; b++) {
                if (before[b] != after[b]) {
                    long at = b;
                    boolean element = (at >= labels && at < labels + 12)
                            || (at >= indices && at < indices + 24)
                            || (at >= status && at < status + 12)
                            || at == pixels
                            || at == pixels + 12
                            || at == pixels + 24;
                    assertTrue(element, "byte " + b + " changed outside the elements written");
                    changed++;
                }
            }
            assertTrue(changed > 9, "the writes were not seen at all: " + changed);
        }
    }

    @Test
    void viewsCoverTheFirstSamplesOnly() {
        try (SlotRing ring = SlotRing.allocate(G)) {
            SlotBody body = new SlotBody(G).wrap(ring.slot(0));
            body.putLabel(0, 7).putLabel(1, 8).putIndex(1, 9).putStatus(1, 2);
            assertEquals(8, body.labels(2).byteSize());
            assertEquals(8, body.labels(2).getAtIndex(JAVA_INT, 1));
            assertEquals(16, body.indices(2).byteSize());
            assertEquals(9, body.indices(2).getAtIndex(JAVA_LONG, 1));
            assertEquals(2, body.statuses(2).getAtIndex(JAVA_INT, 1));
            assertEquals(24, body.pixels(2).byteSize());
            assertEquals(36, body.pixels().byteSize());
            // The same pixels the ring hands out for the slot.
            body.pixels().set(JAVA_BYTE, 35, (byte) 99);
            assertEquals(99, ring.pixels(0).get(JAVA_BYTE, 35));
        }
    }

    @Test
    void refusesASegmentSmallerThanASlot() {
        try (SlotRing ring = SlotRing.allocate(G)) {
            MemorySegment half = ring.slot(0).asSlice(0, G.slotPixelsOffset());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new SlotBody(G).wrap(half));
            assertTrue(e.getMessage().contains("got " + G.slotPixelsOffset()), e.getMessage());
        }
    }
}
