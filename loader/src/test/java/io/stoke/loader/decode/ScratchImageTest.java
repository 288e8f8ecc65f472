package io.stoke.loader.decode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * Where the decoders' rows start: {@link ScratchImage#forDecodedRows} never on a 32-byte boundary
 * (libjpeg-turbo writes such rows with non-temporal stores, which leave them out of the caches the
 * resize then reads them from), but 8-byte aligned, as it is when it grows; a plain scratch stays
 * 64-byte aligned.
 */
class ScratchImageTest {
    @Test
    void decodedRowsStartEightBytesPastA64ByteBoundaryAsTheyGrow() {
        try (ScratchImage rows = ScratchImage.forDecodedRows(1 << 16)) {
            for (long bytes : new long[] {1 << 16, 1 << 20, 3 << 20, 50_000_007L}) {
                MemorySegment s = rows.ensure(bytes);
                assertTrue(s.byteSize() >= bytes);
                assertEquals(ScratchImage.DECODED_ROWS_SKEW, s.address() % 64, "at " + bytes + " bytes");
                assertNotEquals(0, s.address() % 32);
                assertEquals(0, s.address() % 8);
                s.fill((byte) 1); // the whole segment is the caller's
            }
        }
        try (ScratchImage empty = ScratchImage.forDecodedRows(0)) {
            assertEquals(MemorySegment.NULL, empty.segment());
            assertEquals(ScratchImage.DECODED_ROWS_SKEW, empty.ensure(100).address() % 64);
        }
        try (ScratchImage plain = new ScratchImage(1 << 16)) {
            assertEquals(0, plain.ensure(1 << 20).address() % 64);
        }
    }
}
