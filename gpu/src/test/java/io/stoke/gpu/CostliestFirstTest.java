package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The order the GPU decode stage's CPU round takes its images in: the costliest first. */
class CostliestFirstTest {
    @Test
    void aRoundIsOrderedCostliestFirstAndTheRestOfTheArrayIsLeftAsItWas() {
        long[] cost = new long[10];
        cost[2] = 500;
        cost[3] = 40_000;
        cost[5] = 120_000; // a progressive file's bytes, three times over
        cost[7] = 500;
        cost[9] = 9_000;
        int[] positions = {1, 2, 3, 5, 7, 9, 4};
        EncodedBatch.costliestFirst(positions, 1, 6, cost, new long[10]);
        assertArrayEquals(new int[] {1, 5, 3, 9, 7, 2, 4}, positions, "equal costs: the later position first");
    }

    @Test
    void everyPositionIsKeptOnceWhateverTheCosts() {
        SplittableRandom random = new SplittableRandom(3);
        long[] cost = new long[65536];
        for (int i = 0; i < cost.length; i++) {
            cost[i] = random.nextInt(4) == 0 ? Long.MAX_VALUE - random.nextInt(8) : random.nextLong(1_000_000);
        }
        cost[17] = -5; // nothing below zero comes from a length; ordered as zero, kept
        int[] positions = new int[256];
        for (int k = 0; k < positions.length; k++) {
            positions[k] = random.nextInt(65536);
        }
        positions[0] = 17;
        positions[1] = 65535;
        int[] before = positions.clone();
        EncodedBatch.costliestFirst(positions, 0, positions.length, cost, new long[256]);
        int[] sortedBefore = before.clone();
        int[] sortedAfter = positions.clone();
        Arrays.sort(sortedBefore);
        Arrays.sort(sortedAfter);
        assertArrayEquals(sortedBefore, sortedAfter, "the same positions");
        for (int k = 1; k < positions.length; k++) {
            long a = Math.min(Math.max(cost[positions[k - 1]], 0), (1L << 47) - 1);
            long b = Math.min(Math.max(cost[positions[k]], 0), (1L << 47) - 1);
            assertTrue(a >= b, "position " + k + ": " + a + " before " + b);
        }
    }
}
