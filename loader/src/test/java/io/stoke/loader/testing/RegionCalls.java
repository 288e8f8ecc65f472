package io.stoke.loader.testing;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.stoke.ffm.StokeJpeg;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** Stoke's region decoder ({@code stoke_decode_region}) called directly, as the tests that check it call it. */
public final class RegionCalls {
    private RegionCalls() {}

    /** What a region decode returned: its status, message, where its pixels lie, how, and the pixels. */
    public record Region(int status, String message, int x, int width, int path, byte[] rgbx) {}

    /**
     * Rows [y, y + h) and at least columns [x, x + w) of {@code jpeg} scaled by num/denom, into a
     * destination sized as Stoke's Java sizes it; {@code flags} 0 or {@link StokeJpeg#NO_SEEK}.
     */
    public static Region decode(byte[] jpeg, int num, int denom, int x, int y, int w, int h, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(jpeg.length);
            MemorySegment.copy(jpeg, 0, in, JAVA_BYTE, 0, jpeg.length);
            long capacity = (long) (w + 64) * 4 * h;
            MemorySegment dst = arena.allocate(capacity);
            MemorySegment region = arena.allocate(JAVA_INT, StokeJpeg.REGION_FIELDS);
            MemorySegment message = arena.allocate(256);
            int rc = StokeJpeg.decodeRegion(
                    in,
                    jpeg.length,
                    num,
                    denom,
                    x,
                    y,
                    w,
                    h,
                    100_000_000L,
                    500,
                    flags,
                    dst,
                    capacity,
                    region,
                    message,
                    256);
            int rw = region.getAtIndex(JAVA_INT, StokeJpeg.REGION_WIDTH);
            byte[] pixels = rc == StokeJpeg.ERROR
                    ? new byte[0]
                    : dst.asSlice(0, (long) rw * 4 * h).toArray(JAVA_BYTE);
            return new Region(
                    rc,
                    message.getString(0),
                    region.getAtIndex(JAVA_INT, StokeJpeg.REGION_X),
                    rw,
                    region.getAtIndex(JAVA_INT, StokeJpeg.REGION_PATH),
                    pixels);
        }
    }
}
