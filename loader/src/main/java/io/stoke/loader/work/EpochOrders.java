package io.stoke.loader.work;

import io.stoke.loader.sample.Sampler;
import java.util.Arrays;

/**
 * Each epoch's sample order, computed once by whichever worker first needs it and shared. Workers
 * keep the array they last used, so this lock is taken about once per worker per epoch.
 */
final class EpochOrders {
    private static final int KEEP = 4;

    private final Sampler sampler;
    private final long[] epochs = new long[KEEP];
    private final int[][] orders = new int[KEEP][];
    private int[] scratch;
    private int next;

    EpochOrders(Sampler sampler) {
        this.sampler = sampler;
        Arrays.fill(epochs, -1);
    }

    synchronized int[] get(long epoch) {
        for (int i = 0; i < KEEP; i++) {
            if (epochs[i] == epoch && orders[i] != null) {
                return orders[i];
            }
        }
        if (scratch == null) {
            scratch = new int[sampler.datasetSize()];
        }
        int[] order = new int[sampler.samplesPerEpoch(epoch)];
        sampler.order(epoch, scratch, order);
        epochs[next] = epoch;
        orders[next] = order;
        next = (next + 1) % KEEP;
        return order;
    }
}
