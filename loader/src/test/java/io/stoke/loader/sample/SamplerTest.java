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
    void shardWindowShufflesWholeShardsWindowByWindow() {
        int[] first = {0, 10, 25, 25, 31, 50, 62, 70}; // 7 shards, one empty, uneven sizes
        int n = 70;
        Sampler windowed = new Sampler(n, 8, true, 42, false, 0, 1).withShardWindow(first, 2);
        int[] order = windowed.order(3);
        // Every sample exactly once.
        int[] sorted = order.clone();
        Arrays.sort(sorted);
        for (int i = 0; i < n; i++) {
            assertEquals(i, sorted[i]);
        }
        // Cut the order at every point where the shards seen since the last cut are complete: each
        // piece lies within one window, so it mixes at most two shards, and no shard is in two pieces.
        int windows = 0;
        int mixed = 0;
        java.util.Set<Integer> seenShards = new java.util.HashSet<>();
        java.util.Set<Integer> shards = new java.util.TreeSet<>();
        int pieceStart = 0;
        for (int p = 0; p < n; p++) {
            shards.add(shardOf(first, order[p]));
            if (coversWholeShards(first, shards, p + 1 - pieceStart)) {
                assertTrue(shards.size() <= 2, "piece " + windows + " mixes shards " + shards);
                for (int sh : shards) {
                    assertTrue(seenShards.add(sh), "shard " + sh + " in two pieces");
                }
                mixed += shards.size() == 2 ? 1 : 0;
                shards.clear();
                pieceStart = p + 1;
                windows++;
            }
        }
        assertEquals(n, pieceStart);
        assertTrue(mixed >= 1, "no piece mixes two shards");
        assertTrue(windows >= 3, "windows " + windows);
        // A pure function of (seed, epoch); another epoch or seed gives another order.
        assertArrayEquals(order, new Sampler(n, 8, true, 42, false, 0, 1).withShardWindow(first, 2).order(3));
        assertFalse(Arrays.equals(order, windowed.order(4)));
        // Samples within a window are shuffled, not left in shard order.
        assertFalse(Arrays.equals(order, sortedWithinRuns(order, first)));
        // A window of 0, or of every shard, is the global shuffle.
        Sampler global = new Sampler(n, 8, true, 42, false, 0, 1);
        assertArrayEquals(global.order(3), global.withShardWindow(first, 0).order(3));
        assertArrayEquals(global.order(3), global.withShardWindow(first, 7).order(3));
        // Ranks split the windowed order as they split the global one.
        int[] r0 = new Sampler(n, 8, true, 42, false, 0, 2).withShardWindow(first, 2).order(3);
        int[] r1 = new Sampler(n, 8, true, 42, false, 1, 2).withShardWindow(first, 2).order(3);
        for (int i = 0; i < r0.length; i++) {
            assertEquals(order[2 * i], r0[i]);
        }
        for (int i = 0; i < r1.length; i++) {
            assertEquals(order[2 * i + 1], r1[i]);
        }
    }

    private static int shardOf(int[] first, int sample) {
        int s = 0;
        while (first[s + 1] <= sample) {
            s++;
        }
        return s;
    }

    private static boolean coversWholeShards(int[] first, java.util.Set<Integer> shards, int length) {
        int total = 0;
        for (int s : shards) {
            total += first[s + 1] - first[s];
        }
        return total == length;
    }

    private static int[] sortedWithinRuns(int[] order, int[] first) {
        int[] copy = order.clone();
        Arrays.sort(copy, 0, Math.min(copy.length, 10));
        return copy;
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
