package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** The DCT scaling factors libjpeg-turbo supports, as parallel {@code num}/{@code denom} arrays. */
public record ScalingFactors(int[] num, int[] denom) {
    /** Reads {@code tjGetScalingFactors()} once. */
    public static ScalingFactors query() {
        TurboJpeg.ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment array = TurboJpeg.tjGetScalingFactors(count);
            int n = count.get(JAVA_INT, 0);
            if (array.equals(MemorySegment.NULL) || n <= 0) {
                throw new IllegalStateException("tjGetScalingFactors returned nothing");
            }
            MemorySegment factors = array.reinterpret(8L * n);
            int[] num = new int[n];
            int[] denom = new int[n];
            for (int i = 0; i < n; i++) {
                num[i] = factors.getAtIndex(JAVA_INT, 2L * i);
                denom[i] = factors.getAtIndex(JAVA_INT, 2L * i + 1);
            }
            return new ScalingFactors(num, denom);
        }
    }

    public int size() {
        return num.length;
    }
}
