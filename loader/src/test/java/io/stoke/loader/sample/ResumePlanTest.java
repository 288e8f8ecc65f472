package io.stoke.loader.sample;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.sample.Sampler.PartitionTail;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Resuming an epoch on another world, checked against the uninterrupted run's definition alone:
 * every sample of the epoch is delivered once over the worlds that took it, and a repeat is only
 * ever a position the sampler marks as padding.
 */
class ResumePlanTest {
    /** A world: its ranks' samplers over one dataset, with one batch size and tail. */
    private record World(int size, int batch, boolean dropLast, PartitionTail tail) {
        Sampler rank(int n, int r, long seed, int[] shardFirst, int window) {
            Sampler s = new Sampler(n, batch, true, seed, dropLast, r, size, tail);
            return shardFirst == null ? s : s.withShardWindow(shardFirst, window);
        }
    }

    /**
     * Takes batches [from, from + steps[r]) of epoch e on every rank of {@code world} (resumed by
     * {@code plan}, or whole), counting each unpadded sample in {@code seen} and each padding
     * position in {@code padding[0]}; gives each rank's state.
     */
    private static List<LoaderState> take(
            int n,
            long seed,
            int[] shardFirst,
            int window,
            World world,
            ResumePlan plan,
            long e,
            int[] steps,
            int[] seen,
            int[] padding) {
        List<LoaderState> states = new ArrayList<>();
        for (int r = 0; r < world.size(); r++) {
            Sampler s = world.rank(n, r, seed, shardFirst, window);
            int from = 0;
            if (plan != null) {
                assertEquals(e, plan.epoch());
                s = plan.apply(s);
                from = plan.startBatch();
            }
            int batches = s.batchesPerEpoch(e);
            int until = Math.min(batches, from + steps[r]);
            int[] order = s.order(e);
            for (int k = from; k < until; k++) {
                int size = s.batchSize(e, k);
                int padded = s.paddedIn(e, k);
                for (int i = 0; i < size; i++) {
                    int p = k * world.batch() + i;
                    if (i >= size - padded) {
                        padding[0]++;
                    } else {
                        seen[order[p]]++;
                    }
                }
            }
            states.add(LoaderState.of(s, r, world.size(), e, until));
        }
        return states;
    }

    /** Takes the rest of epoch e on every rank of {@code world} after {@code plan}. */
    private static void finish(
            int n, long seed, int[] shardFirst, int window, World world, ResumePlan plan, int[] seen, int[] padding) {
        int[] all = new int[world.size()];
        Arrays.fill(all, Integer.MAX_VALUE / 2);
        take(n, seed, shardFirst, window, world, plan, plan.epoch(), all, seen, padding);
    }

    private static World world(SplittableRandom random, int n, boolean exact) {
        int size = 1 + random.nextInt(6);
        int batch = 1 + random.nextInt(Math.max(1, Math.min(40, n / size)));
        boolean dropLast = !exact && random.nextInt(4) == 0;
        PartitionTail tail = !exact && random.nextInt(4) == 0 && n >= size ? PartitionTail.DROP : PartitionTail.PAD;
        return new World(size, batch, dropLast, tail);
    }

    @Test
    void aStateFromAnyWorldResumesOnAnyOtherAndEverySampleComesOnceOverManyCases() {
        SplittableRandom random = new SplittableRandom(37);
        int cases = 0;
        while (cases < 600) {
            int n = 1 + random.nextInt(300);
            boolean exact = random.nextInt(3) > 0; // PAD and no drop_last everywhere: exactly once
            World a = world(random, n, exact);
            World b = world(random, n, exact);
            World c = world(random, n, exact);
            long seed = random.nextLong();
            int[] shardFirst = null;
            int window = 0;
            if (random.nextBoolean() && n >= 4) {
                int shards = 2 + random.nextInt(Math.min(10, n - 1));
                shardFirst = new int[shards + 1];
                for (int s = 1; s < shards; s++) {
                    shardFirst[s] = s * n / shards;
                }
                shardFirst[shards] = n;
                window = 1 + random.nextInt(3);
            }
            Sampler probeA;
            try {
                probeA = a.rank(n, 0, seed, shardFirst, window);
                a.rank(n, 0, seed, shardFirst, window);
                b.rank(n, 0, seed, shardFirst, window);
                c.rank(n, 0, seed, shardFirst, window);
            } catch (IllegalArgumentException tooSmall) {
                continue; // a world with no batch at all (drop_last, DROP) is refused up front
            }
            cases++;
            long e = random.nextInt(3);
            int[] seen = new int[n];
            int[] padding = {0};
            // World a takes a few batches on every rank: the same step, or each its own.
            boolean ragged = random.nextBoolean();
            int[] steps = new int[a.size()];
            int common = random.nextInt(probeA.batchesPerEpoch() + 1);
            for (int r = 0; r < a.size(); r++) {
                steps[r] = ragged ? random.nextInt(probeA.batchesPerEpoch() + 1) : common;
            }
            List<LoaderState> statesA = take(n, seed, shardFirst, window, a, null, e, steps, seen, padding);
            // Every rank's states when ragged; one rank's (any) when not.
            List<LoaderState> given = ragged ? statesA : List.of(statesA.get(random.nextInt(a.size())));
            ResumePlan toB = ResumePlan.of(given, b.rank(n, 0, seed, shardFirst, window));
            String why = "n=" + n + " a=" + a + " b=" + b + " c=" + c + " steps=" + Arrays.toString(steps) + " window="
                    + window + ": " + toB.report();
            if (toB.epoch() == e) {
                // World b takes some of the rest, then world c finishes it from b's states.
                int[] stepsB = new int[b.size()];
                int k = random.nextInt(3);
                Arrays.fill(stepsB, k);
                List<LoaderState> statesB = take(n, seed, shardFirst, window, b, toB, e, stepsB, seen, padding);
                ResumePlan toC = ResumePlan.of(statesB.subList(0, 1), c.rank(n, 0, seed, shardFirst, window));
                if (toC.epoch() == e) {
                    finish(n, seed, shardFirst, window, c, toC, seen, padding);
                } else {
                    assertEquals(e + 1, toC.epoch(), why);
                }
            } else {
                assertEquals(e + 1, toB.epoch(), why);
                assertEquals(0, toB.startBatch(), why);
            }
            for (int i = 0; i < n; i++) {
                if (exact) {
                    assertEquals(1, seen[i], "sample " + i + " of " + why);
                } else {
                    assertTrue(seen[i] <= 1, "sample " + i + " twice: " + why);
                }
            }
        }
    }

    @Test
    void ranksThatStoppedAtDifferentStepsLoseNothingAndRepeatNothingWhenEveryStateIsGiven() {
        int n = 1000;
        World four = new World(4, 50, false, PartitionTail.PAD);
        World two = new World(2, 100, false, PartitionTail.PAD);
        int[] seen = new int[n];
        int[] padding = {0};
        List<LoaderState> states = take(n, 3, null, 0, four, null, 2, new int[] {3, 3, 2, 3}, seen, padding);
        ResumePlan plan = ResumePlan.of(states, two.rank(n, 0, 3, null, 0));
        assertEquals(550, Arrays.stream(seen).sum());
        assertTrue(plan.report().contains("550 of its 1000 samples taken, 450 left"), plan.report());
        assertTrue(
                plan.report().contains("none taken twice (from the lowest step, 150 would have been)"), plan.report());
        finish(n, 3, null, 0, two, plan, seen, padding);
        for (int i = 0; i < n; i++) {
            assertEquals(1, seen[i], "sample " + i);
        }
        assertEquals(0, padding[0], "450 left over 2 ranks: 225 each, no padding");
        assertEquals(3, plan.apply(two.rank(n, 1, 3, null, 0)).batchesPerEpoch(2), "batches of 100, 100 and 25");
        assertTrue(plan.report().contains("split over 2 ranks as 3 batches of up to 100 each"), plan.report());

        // From the lowest step alone, the 150 samples the others took past it come again.
        int[] again = new int[n];
        take(n, 3, null, 0, four, null, 2, new int[] {3, 3, 2, 3}, again, padding);
        LoaderState lowest = states.get(2);
        finish(n, 3, null, 0, two, ResumePlan.of(List.of(lowest), two.rank(n, 0, 3, null, 0)), again, padding);
        assertEquals(150, Arrays.stream(again).filter(x -> x == 2).count());
        assertEquals(0, Arrays.stream(again).filter(x -> x == 0).count());
    }

    @Test
    void onTheSameWorldTheRunGoesOnAsIfItHadNotStopped() {
        Sampler r1 = new Sampler(103, 8, true, 5, false, 1, 3);
        LoaderState state = LoaderState.of(r1, 1, 3, 4, 2);
        ResumePlan plan = ResumePlan.of(List.of(state), r1);
        assertEquals(4, plan.epoch());
        assertEquals(2, plan.startBatch());
        assertEquals(List.of(), plan.cuts());
        assertArrayEquals(r1.order(4), plan.apply(r1).order(4));
        // Finished on every rank: the next epoch, whole.
        ResumePlan done = ResumePlan.of(List.of(LoaderState.of(r1, 1, 3, 4, r1.batchesPerEpoch())), r1);
        assertEquals(5, done.epoch());
        assertEquals(0, done.startBatch());
    }

    @Test
    void aStateOfAnotherOrderOrOfAnIncompleteWorldIsRefusedNamingWhatDiffers() {
        Sampler four = new Sampler(1000, 50, true, 3, false, 0, 4);
        LoaderState s = LoaderState.of(four, 0, 4, 1, 3);
        String seed = assertThrows(
                        IllegalArgumentException.class,
                        () -> ResumePlan.of(List.of(s), new Sampler(1000, 100, true, 4, false, 0, 2)))
                .getMessage();
        assertTrue(seed.contains("seed=3, this loader has 4"), seed);
        String size = assertThrows(
                        IllegalArgumentException.class,
                        () -> ResumePlan.of(List.of(s), new Sampler(999, 100, true, 3, false, 0, 2)))
                .getMessage();
        assertTrue(size.contains("dataset_size=1000, this loader has 999"), size);
        List<LoaderState> three = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            three.add(LoaderState.of(new Sampler(1000, 50, true, 3, false, r, 4), r, 4, 1, 3));
        }
        String partial = assertThrows(
                        IllegalArgumentException.class,
                        () -> ResumePlan.of(three, new Sampler(1000, 100, true, 3, false, 0, 2)))
                .getMessage();
        assertTrue(partial.contains("states of 3 of the 4 ranks"), partial);
        LoaderState later = LoaderState.of(new Sampler(1000, 50, true, 3, false, 3, 4), 3, 4, 2, 1);
        List<LoaderState> spread = new ArrayList<>(three);
        spread.add(later);
        String epochs = assertThrows(
                        IllegalArgumentException.class,
                        () -> ResumePlan.of(spread, new Sampler(1000, 100, true, 3, false, 0, 2)))
                .getMessage();
        assertTrue(epochs.contains("in epoch 2 and another's in epoch 1"), epochs);
    }

    @Test
    void aStateReadsBackFromItsJsonAndVersionOneStillReads() {
        Sampler s = new Sampler(1000, 50, true, 3, true, 1, 4, PartitionTail.DROP)
                .resuming(2, List.of(new EpochCut(3, new int[] {5, 5, 4})));
        LoaderState state = LoaderState.of(s, 1, 4, 2, 1);
        assertEquals(List.of(state), LoaderState.parse(state.toJson(), "state.json"));
        assertEquals(List.of(state, state), LoaderState.parse("[" + state.toJson() + "," + state.toJson() + "]", "x"));
        LoaderState v1 = LoaderState.parse(
                        "{\"epoch\": 1, \"batch\": 3, \"seed\": 3, \"shuffle\": true, \"batch_size\": 50, "
                                + "\"drop_last\": false, \"rank\": 0, \"world_size\": 4, \"dataset_size\": 1000, "
                                + "\"transform\": \"train\", \"shuffle_window\": null, \"shard_tail\": \"pad\"}",
                        "v1")
                .get(0);
        assertEquals(3, v1.batchesTaken());
        assertEquals(List.of(), v1.cuts());
        String later = assertThrows(
                        IllegalArgumentException.class,
                        () -> LoaderState.parse(state.toJson().replace("\"version\":2", "\"version\":3"), "x"))
                .getMessage();
        assertTrue(later.contains("version 3, written by a later Stoke"), later);
    }
}
