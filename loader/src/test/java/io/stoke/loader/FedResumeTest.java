package io.stoke.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.OrderFeedRecords;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Java loader whose order comes through an order feed saves that order in {@link Loader#state()},
 * and a loader resumed from the state (through its JSON) over real files delivers exactly the rest of
 * the fed epoch, pixels and random crops included, where the feed gives that epoch again; where it
 * cannot (no feed, another order, a state of the loader's own order) it refuses saying why.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FedResumeTest {
    private static final TransformSpec TRAIN = TransformSpec.defaults().withTrain(40, RandomResizedCrop.defaults());

    // Two epochs as a sampler might give them: repeats, growing batches, not the seed's order.
    private static final int[] SIZES_0 = {3, 8, 5, 8, 2, 7};
    private static final int[] ORDER_0 = {
        5, 5, 30, 1, 2, 3, 36, 0, 9, 9, 9, 12, 17, 4, 22, 21, 20, 19, 18, 6, 7, 8, 10, 11, 13, 14, 15, 16, 23, 24, 25,
        26, 27
    };
    private static final int[] SIZES_1 = {8, 8, 4};
    private static final int[] ORDER_1 = {36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17
    };

    @TempDir
    static Path tmp;

    static Dataset dataset;

    @BeforeAll
    static void makeData() {
        dataset = ImageFolder.scan(TestImages.imageFolder(tmp.resolve("data"), 37, 3, 1));
    }

    private static Loader.Builder fed(Path feed) {
        return Loader.builder(dataset)
                .transform(TRAIN)
                .seed(11)
                .batchSize(8)
                .workers(3)
                .slots(3)
                .epochs(0)
                .orderFeed(feed);
    }

    /**
     * The feed's records (docs/shared-memory.md#the-order-feed) for epochs from {@code first}, in a
     * file, and a long last epoch that the tests never reach the end of: a feed that ends stops the
     * loader, as the end of a consumer's pipe does.
     */
    private static Path feed(String name, long first, int[]... sizesThenOrders) throws IOException {
        int[] tailSizes = new int[64];
        Arrays.fill(tailSizes, 8);
        sizesThenOrders = Arrays.copyOf(sizesThenOrders, sizesThenOrders.length + 2);
        sizesThenOrders[sizesThenOrders.length - 2] = tailSizes;
        sizesThenOrders[sizesThenOrders.length - 1] = new int[64 * 8];
        return Files.write(tmp.resolve(name), OrderFeedRecords.epochs(first, sizesThenOrders));
    }

    private static String describe(Batch b) {
        long[] idx = b.indices().toArray(ValueLayout.JAVA_LONG);
        CRC32 crc = new CRC32();
        MemorySegment pixels = b.pixels();
        crc.update(pixels.asByteBuffer());
        return b.epoch() + "/" + b.batchIndex() + " " + Arrays.toString(idx) + " " + crc.getValue();
    }

    private static List<String> take(Loader loader, int batches) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < batches; i++) {
            try (Batch b = loader.next()) {
                out.add(describe(b));
            }
        }
        return out;
    }

    @Test
    void aResumedFedLoaderDeliversExactlyTheRestOfTheEpochInOrder() throws IOException {
        int all = SIZES_0.length + SIZES_1.length;
        Path both = feed("both", 0, SIZES_0, ORDER_0, SIZES_1, ORDER_1);
        List<String> whole;
        try (Loader l = fed(both).build()) {
            whole = take(l, all);
        }
        assertEquals(
                "0/1 [1, 2, 3, 36, 0, 9, 9, 9]",
                whole.get(1).substring(0, whole.get(1).lastIndexOf(' ')));
        // Stopped inside epoch 0, at its end, and inside epoch 1 (the feed then starting there).
        for (int k : new int[] {1, 4, SIZES_0.length, SIZES_0.length + 2}) {
            String json;
            try (Loader l = fed(both).build()) {
                assertEquals(whole.subList(0, k), take(l, k));
                json = l.state().toJson();
            }
            LoaderState saved = LoaderState.parse(json, "state after " + k).get(0);
            assertEquals(LoaderState.ORDER_FEED, saved.given().kind());
            boolean inFirst = k <= SIZES_0.length;
            assertEquals(inFirst ? 0 : 1, saved.epoch());
            assertEquals(inFirst ? k : k - SIZES_0.length, saved.batchesTaken());
            assertTrue(
                    Arrays.equals(
                            inFirst ? ORDER_0 : ORDER_1, saved.given().order().indices()),
                    json);
            Path again = k < SIZES_0.length
                    ? both
                    : feed("from1-" + k, 1, SIZES_1, ORDER_1); // a finished epoch 0 resumes at epoch 1
            try (Loader l = fed(again).resume(List.of(saved)).build()) {
                assertEquals(whole.subList(k, all), take(l, all - k), "resumed after " + k + " batches");
            }
        }
    }

    @Test
    void aFedStateIsRefusedWhereItsOrderCannotBeGivenAgain() throws IOException {
        Path both = feed("refused", 0, SIZES_0, ORDER_0, SIZES_1, ORDER_1);
        LoaderState saved;
        try (Loader l = fed(both).build()) {
            take(l, 2);
            saved = l.state();
        }
        // Without a feed, the seed's order is not the one its batches were taken in.
        IllegalArgumentException unfed = assertThrows(
                IllegalArgumentException.class,
                () -> Loader.builder(dataset)
                        .transform(TRAIN)
                        .seed(11)
                        .batchSize(8)
                        .resume(List.of(saved))
                        .build());
        assertTrue(
                unfed.getMessage().contains("which the seed cannot draw again: resume with an order feed"),
                unfed.getMessage());
        // A feed that gives epoch 0 another order stops the loader naming the first difference.
        int[] swapped = ORDER_0.clone();
        swapped[20] = ORDER_0[21];
        swapped[21] = ORDER_0[20];
        try (Loader l =
                fed(feed("other", 0, SIZES_0, swapped)).resume(List.of(saved)).build()) {
            IllegalStateException other = assertThrows(IllegalStateException.class, l::next);
            assertTrue(
                    other.getMessage()
                            .contains("epoch 0's order is not the one the resumed state was saved in: "
                                    + "position 20 is index 8, the saved 7"),
                    other.getMessage());
        }
        // A state of the loader's own order, resumed where the order is fed.
        LoaderState own;
        try (Loader l = Loader.builder(dataset).transform(TRAIN).batchSize(8).build()) {
            take(l, 1);
            own = l.state();
        }
        assertNull(own.given());
        IllegalArgumentException notFed = assertThrows(
                IllegalArgumentException.class,
                () -> fed(both).resume(List.of(own)).build());
        assertTrue(notFed.getMessage().contains("saved with the loader's own order"), notFed.getMessage());
    }
}
