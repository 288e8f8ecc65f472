package io.stoke.loader.testing;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Order-feed records as a consumer writes them (docs/shared-memory.md, "The order feed"): little-endian
 * int64s, the epoch, its batches, its samples, then the batch sizes, then the dataset indices. The
 * one encoder of the tests that drive an {@link io.stoke.loader.sample.OrderFeed}; the Python client
 * writes the same bytes.
 */
public final class OrderFeedRecords {
    private OrderFeedRecords() {}

    /** One epoch's record. */
    public static byte[] record(long epoch, int[] batchSizes, int[] indices) {
        ByteBuffer b = ByteBuffer.allocate(8 * (3 + batchSizes.length + indices.length))
                .order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(epoch).putLong(batchSizes.length).putLong(indices.length);
        for (int s : batchSizes) {
            b.putLong(s);
        }
        for (int i : indices) {
            b.putLong(i);
        }
        return b.array();
    }

    /**
     * Records for consecutive epochs from {@code first}, each given as its batch sizes then its
     * indices: {@code sizes0, order0, sizes1, order1, ...}.
     */
    public static byte[] epochs(long first, int[]... sizesThenOrders) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int e = 0; e < sizesThenOrders.length; e += 2) {
            out.writeBytes(record(first + e / 2, sizesThenOrders[e], sizesThenOrders[e + 1]));
        }
        return out.toByteArray();
    }
}
