package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class RingGeometryTest {
    /** The C validator's twin bug, found by fuzz_ring_validate: (long) d0 * d1 * d2 wrapped (here to 0) and passed. */
    @Test
    void aSampleShapeWhoseProductOverflowsALongIsRefused() {
        int d0 = 1 << 21;
        int d1 = 1 << 21;
        int d2 = 1 << 22;
        assertEquals(0, (long) d0 * d1 * d2, "the product this test is about wraps");
        assertThrows(IllegalArgumentException.class, () -> new RingGeometry(1, 1, DTYPE_UINT8, LAYOUT_HWC, d0, d1, d2));
        assertThrows(
                IllegalArgumentException.class, () -> new RingGeometry(1, 1, DTYPE_UINT8, LAYOUT_HWC, 65536, 32768, 2));
        assertEquals(3L * 224 * 224, new RingGeometry(1, 1, DTYPE_UINT8, LAYOUT_HWC, 224, 224, 3).sampleBytes());
    }
}
