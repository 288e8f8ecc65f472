package io.stoke.loader.sample;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class SamplerTest {
    @ParameterizedTest(name = "n={0} world={1}")
    @CsvSource({"1000, 1", "1000, 3", "7, 4", "1001, 8", "5, 5"})
    void shardsAreDisjointAndCoverEverySampleOncePerEpoch(int n, int world) {
        for (long epoch = 0; epoch < 3; epoch++) {
            int[] seen = new int[n];
            int min = Integer.MAX_VALUE;
            int max = 0;
            for (int rank = 0; rank < world; rank++) {
                Sampler s = new Sampler(n, 4, true, 42, false, rank, world);
                int[] order = s.order(epoch);
                min = Math.min(min, order.length);
                max = Math.max(max, order.length);
                for (int i : order) {
                    seen[i]++;
                }
            }
            for (int i = 0; i < n; i++) {
                assertEquals(1, seen[i], "sample " + i + " in epoch " + epoch);
            }
            assertTrue(max - min <= 1, "shard sizes differ by more than one");
        }
    }

    @Test
    void orderIsAPureFunctionOfSeedEpochRankAndWorld() {
        Sampler a = new Sampler(500, 8, true, 7, false, 1, 3);
        Sampler b = new Sampler(500, 8, true, 7, false, 1, 3);
        assertArrayEquals(a.order(5), b.order(5));
        assertFalse(Arrays.equals(a.order(5), a.order(6)), "epochs should differ");
        assertFalse(Arrays.equals(a.order(5), new Sampler(500, 8, true, 8, false, 1, 3).order(5)), "seeds should differ");
    }

    @Test
    void sequentialWithoutShuffle() {
        Sampler s = new Sampler(10, 3, false, 0, false, 0, 1);
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, s.order(3));
        assertEquals(4, s.batchesPerEpoch());
        assertEquals(1, s.batchSize(3));
    }

    @Test
    void dropLastDropsOnlyThePartialBatch() {
        Sampler s = new Sampler(10, 3, true, 1, true, 0, 1);
        assertEquals(9, s.samplesPerEpoch());
        assertEquals(3, s.batchesPerEpoch());
        assertThrows(IllegalArgumentException.class, () -> new Sampler(2, 3, false, 0, true, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new Sampler(10, 3, false, 0, false, 2, 2));
    }
}
