package io.stoke.loader.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.sample.LoaderState;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The elastic resume every dataset kind must pass: 4 ranks take 3 batches of 50 of an epoch and
 * save their states; the epoch is finished by 2 ranks of 100, and separately by 3 ranks of 50;
 * each time every sample of the epoch comes exactly once, before and after, a repeat is only ever
 * marked padding, every new rank takes as many batches, and the next epoch is whole and disjoint
 * across the new ranks. Needs a dataset of more than 600 samples.
 */
public final class ElasticResume {
    private ElasticResume() {}

    /** Runs the scenario over loaders from {@code base} (dataset, transform, workers; shuffled, seeded). */
    public static void check(Supplier<Loader.Builder> base, long epoch) {
        int n = base.get().sampler().datasetSize();
        assertTrue(n > 600, "the scenario takes 600 samples before the resume: " + n);
        int[] before = new int[n];
        List<LoaderState> states = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            try (Loader l = base.get()
                    .partition(r, 4)
                    .batchSize(50)
                    .startEpoch(epoch)
                    .epochs(1)
                    .build()) {
                for (int k = 0; k < 3; k++) {
                    try (Batch b = l.next()) {
                        assertEquals(epoch, b.epoch());
                        assertEquals(k, b.batchIndex());
                        count(b, before, null);
                    }
                }
                states.add(l.state());
            }
        }
        assertEquals(600, sum(before));
        for (int w : new int[] {2, 3}) {
            int batch = w == 2 ? 100 : 50;
            int[] seen = before.clone();
            int[] next = new int[n];
            int[] padded = {0};
            int[] nextPadded = {0};
            Set<Long> batchesPerRank = new HashSet<>();
            List<LoaderState> given = w == 2 ? List.of(states.get(1)) : states; // one rank's, or all of them
            for (int r = 0; r < w; r++) {
                try (Loader l = base.get()
                        .partition(r, w)
                        .batchSize(batch)
                        .resume(given)
                        .epochs(2)
                        .build()) {
                    assertEquals(epoch, l.resumed().epoch(), l.resumed().report());
                    long batches = 0;
                    for (Batch b : l) {
                        try (b) {
                            if (b.epoch() == epoch) {
                                batches++;
                                count(b, seen, padded);
                            } else {
                                assertEquals(epoch + 1, b.epoch());
                                count(b, next, nextPadded);
                            }
                        }
                    }
                    batchesPerRank.add(batches);
                }
            }
            assertEquals(1, batchesPerRank.size(), "ranks of " + w + " took different batch counts: " + batchesPerRank);
            for (int i = 0; i < n; i++) {
                assertEquals(1, seen[i], "sample " + i + " in the epoch resumed on " + w + " ranks");
                assertEquals(1, next[i], "sample " + i + " in the next epoch on " + w + " ranks");
            }
            int perRank = (n - 600 + w - 1) / w;
            assertEquals(perRank * w - (n - 600), padded[0], "padding of the remainder over " + w + " ranks");
            assertEquals((n + w - 1) / w * w - n, nextPadded[0], "padding of the next epoch over " + w + " ranks");
        }
    }

    /** Counts the batch's samples in {@code seen}; padding in {@code padded[0]} (or fails where none is expected). */
    private static void count(Batch b, int[] seen, int[] padded) {
        for (int i = 0; i < b.size(); i++) {
            if (b.isPadding(i)) {
                assertTrue(padded != null, "padding in batch " + b.batchIndex() + " of epoch " + b.epoch());
                padded[0]++;
            } else {
                seen[(int) b.index(i)]++;
            }
        }
    }

    private static int sum(int[] a) {
        int s = 0;
        for (int x : a) {
            s += x;
        }
        return s;
    }
}
