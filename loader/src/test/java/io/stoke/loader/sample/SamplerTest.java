package io.stoke.loader.sample;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.sample.Sampler.PartitionTail;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SamplerTest {
    @ParameterizedTest(name = "n={0} world={1}")
    @CsvSource({"1000, 1", "1000, 3", "7, 4", "1001, 8", "5, 5", "41, 2", "3, 5"})
    void everyRankGetsCeilNOverWAndTheUnpaddedSamplesCoverTheEpochOnce(int n, int world) {
        int perRank = (n + world - 1) / world;
        for (long epoch = 0; epoch < 3; epoch++) {
            int[] seen = new int[n];
            for (int rank = 0; rank < world; rank++) {
                Sampler s = new Sampler(n, 4, true, 42, false, rank, world);
                assertEquals(PartitionTail.PAD, s.partitionTail());
                int[] order = s.order(epoch);
                assertEquals(perRank, order.length, "rank " + rank);
                assertEquals(perRank, s.samplesPerEpoch());
                int padded = 0;
                for (int p = 0; p < order.length; p++) {
                    assertEquals(rank + (long) p * world >= n, s.isPadding(p), "position " + p);
                    if (s.isPadding(p)) {
                        padded++;
                    } else {
                        assertEquals(0, padded, "padding is a suffix of the epoch");
                        seen[order[p]]++;
                    }
                }
                assertEquals(order.length - padded, s.unpaddedSamples());
            }
            for (int i = 0; i < n; i++) {
                assertEquals(1, seen[i], "sample " + i + " in epoch " + epoch);
            }
        }
    }

    /**
     * PyTorch's DistributedSampler.__iter__, line by line, over Stoke's permutation (the order of the
     * one-rank sampler with the same seed): rank r's indices are the same list.
     */
    @ParameterizedTest(name = "n={0} world={1} dropLast={2}")
    @CsvSource({
        "41, 2, false",
        "41, 2, true",
        "10, 4, false",
        "10, 4, true",
        "3, 5, false",
        "1001, 8, false",
        "1001, 8, true",
        "12, 3, false",
        "12, 3, true"
    })
    void ranksTakeTheIndicesOfPyTorchsDistributedSamplerForTheSamePermutation(int n, int world, boolean torchDropLast) {
        for (long epoch = 0; epoch < 2; epoch++) {
            int[] permutation = new Sampler(n, 4, true, 7, false, 0, 1).order(epoch);
            List<Integer> indices = new ArrayList<>();
            for (int i : permutation) {
                indices.add(i);
            }
            int numSamples = torchDropLast && n % world != 0
                    ? (int) Math.ceil((n - world) / (double) world)
                    : (int) Math.ceil(n / (double) world);
            int totalSize = numSamples * world;
            if (!torchDropLast) {
                int paddingSize = totalSize - indices.size();
                List<Integer> pad = new ArrayList<>();
                if (paddingSize <= indices.size()) {
                    pad.addAll(indices.subList(0, paddingSize));
                } else {
                    for (int k = 0; k < (paddingSize + indices.size() - 1) / indices.size(); k++) {
                        pad.addAll(indices);
                    }
                    pad = pad.subList(0, paddingSize);
                }
                indices.addAll(pad);
            } else {
                indices = indices.subList(0, totalSize);
            }
            for (int rank = 0; rank < world; rank++) {
                List<Integer> expected = new ArrayList<>();
                for (int i = rank; i < totalSize; i += world) {
                    expected.add(indices.get(i));
                }
                Sampler s = new Sampler(
                        n, 4, true, 7, false, rank, world, torchDropLast ? PartitionTail.DROP : PartitionTail.PAD);
                assertEquals(
                        expected, Arrays.stream(s.order(epoch)).boxed().toList(), "rank " + rank + " epoch " + epoch);
            }
        }
    }

    @Test
    void dropGivesEveryRankFloorNOverWAndLeavesTheRestOut() {
        int n = 41;
        int[] seen = new int[n];
        for (int rank = 0; rank < 3; rank++) {
            Sampler s = new Sampler(n, 4, true, 3, false, rank, 3, PartitionTail.DROP);
            assertEquals(13, s.samplesPerEpoch());
            assertEquals(4, s.batchesPerEpoch());
            assertEquals(13, s.unpaddedSamples());
            assertFalse(s.isPadding(12));
            assertEquals(0, s.paddedIn(3));
            for (int i : s.order(0)) {
                seen[i]++;
            }
        }
        assertEquals(39, Arrays.stream(seen).sum());
        assertTrue(Arrays.stream(seen).allMatch(c -> c <= 1), "no sample twice");
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> new Sampler(3, 1, false, 0, false, 0, 5, PartitionTail.DROP));
        assertTrue(e.getMessage().contains("floor(3/5) = 0"), e.getMessage());
        assertThrows(
                IllegalArgumentException.class, () -> new Sampler(3, 1, false, 0, false, 0, 5, (PartitionTail) null));
    }

    @Test
    void oneRankIsThePermutationWhateverTheTail() {
        for (PartitionTail tail : PartitionTail.values()) {
            Sampler s = new Sampler(45, 8, true, 5, false, 0, 1, tail);
            assertArrayEquals(new Sampler(45, 8, true, 5, false, 0, 1).order(2), s.order(2));
            assertEquals(45, s.samplesPerEpoch());
            assertEquals(45, s.unpaddedSamples());
            assertEquals(0, s.paddedIn(5));
        }
    }

    @Test
    void paddedInCountsEachBatchsPaddingAtItsEnd() {
        // 41 samples, 2 ranks, batch 4: rank 1 gets 21 positions, the last (position 20: 1 + 40 >= 41) padding.
        Sampler r1 = new Sampler(41, 4, true, 1, false, 1, 2);
        assertEquals(6, r1.batchesPerEpoch());
        assertEquals(1, r1.batchSize(5));
        assertEquals(1, r1.paddedIn(5));
        for (int k = 0; k < 5; k++) {
            assertEquals(0, r1.paddedIn(k));
        }
        assertEquals(r1.order(0)[20], new Sampler(41, 4, true, 1, false, 0, 1).order(0)[0], "padding repeats P[0]");
        Sampler r0 = new Sampler(41, 4, true, 1, false, 0, 2);
        assertEquals(0, r0.paddedIn(5));
        // Batch-level dropLast drops the partial batch, padding and all.
        Sampler dropped = new Sampler(41, 4, true, 1, true, 1, 2);
        assertEquals(5, dropped.batchesPerEpoch());
        assertEquals(20, dropped.unpaddedSamples());
        // Padding spanning batches: 3 samples, 5 ranks, batch 1: ranks 3 and 4 get only padding.
        Sampler r4 = new Sampler(3, 1, false, 0, false, 4, 5);
        assertEquals(1, r4.samplesPerEpoch());
        assertEquals(1, r4.paddedIn(0));
        assertArrayEquals(new int[] {1}, r4.order(0));
    }

    @Test
    void orderIsAPureFunctionOfSeedEpochRankAndWorld() {
        Sampler a = new Sampler(500, 8, true, 7, false, 1, 3);
        Sampler b = new Sampler(500, 8, true, 7, false, 1, 3);
        assertArrayEquals(a.order(5), b.order(5));
        assertFalse(Arrays.equals(a.order(5), a.order(6)), "epochs should differ");
        assertFalse(
                Arrays.equals(a.order(5), new Sampler(500, 8, true, 8, false, 1, 3).order(5)), "seeds should differ");
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
        Set<Integer> seenShards = new HashSet<>();
        Set<Integer> shards = new TreeSet<>();
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
        assertArrayEquals(
                order,
                new Sampler(n, 8, true, 42, false, 0, 1)
                        .withShardWindow(first, 2)
                        .order(3));
        assertFalse(Arrays.equals(order, windowed.order(4)));
        // Samples within a window are shuffled, not left in shard order.
        assertFalse(Arrays.equals(order, sortedWithinRuns(order, first)));
        // A window of 0, or of every shard, is the global shuffle.
        Sampler global = new Sampler(n, 8, true, 42, false, 0, 1);
        assertArrayEquals(global.order(3), global.withShardWindow(first, 0).order(3));
        assertArrayEquals(global.order(3), global.withShardWindow(first, 7).order(3));
        // Ranks split the windowed order as they split the global one.
        int[] r0 = new Sampler(n, 8, true, 42, false, 0, 2)
                .withShardWindow(first, 2)
                .order(3);
        int[] r1 = new Sampler(n, 8, true, 42, false, 1, 2)
                .withShardWindow(first, 2)
                .order(3);
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

    private static boolean coversWholeShards(int[] first, Set<Integer> shards, int length) {
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
