package io.stoke.loader;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.sample.LoaderState;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.ElasticResume;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run checkpointed on 4 ranks resumes mid-epoch on 2 and on 3 ({@link ElasticResume}), over a
 * folder and over tar shards shuffled within windows; on the same world it goes on exactly as the
 * uninterrupted run, pixels included.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ElasticResumeTest {
    static final TransformSpec SMALL = TransformSpec.defaults().withResize(24, 16);
    static final TransformSpec TRAIN = TransformSpec.defaults().withTrain(24, RandomResizedCrop.defaults());

    @TempDir
    static Path tmp;

    static Dataset folder;
    static Dataset shards;

    @BeforeAll
    static void makeData() throws IOException {
        folder = ImageFolder.scan(TestImages.imageFolder(tmp.resolve("folder"), 1003, 7, 3));
        Path dir = Files.createDirectories(tmp.resolve("shards"));
        for (int s = 0; s < 17; s++) {
            TestTars.labelledShard(dir.resolve(String.format("train-%02d.tar", s)), s, 59);
        }
        shards = Datasets.openLocal(dir.toString());
    }

    @AfterAll
    static void close() {
        if (shards != null) {
            shards.close();
        }
    }

    private static Loader.Builder over(Dataset d) {
        return Loader.builder(d)
                .transform(SMALL)
                .workers(2)
                .slots(3)
                .shuffle(true)
                .seed(11);
    }

    @Test
    void aFolderCheckpointedOnFourRanksFinishesItsEpochOnTwoAndOnThree() {
        ElasticResume.check(() -> over(folder), 2);
    }

    @Test
    void tarShardsShuffledInWindowsDoTheSame() {
        assertEquals(1003, shards.size());
        ElasticResume.check(() -> over(shards).shuffleWindow(3), 1);
    }

    /** Rank 1 of 3, batches of 40, the training transform's random crops. */
    private static Loader.Builder rankOneOfThree() {
        return over(folder).transform(TRAIN).partition(1, 3).batchSize(40);
    }

    @Test
    void onTheSameWorldTheResumedRunIsTheUninterruptedOneBatchForBatch() {
        List<String> whole = new ArrayList<>();
        try (Loader l = rankOneOfThree().epochs(2).build()) {
            for (Batch b : l) {
                try (b) {
                    whole.add(describe(b));
                }
            }
        }
        LoaderState state;
        try (Loader l = rankOneOfThree().epochs(2).build()) {
            for (int k = 0; k < 4; k++) {
                l.next().close();
            }
            state = l.state();
        }
        List<String> rest = new ArrayList<>();
        try (Loader l = rankOneOfThree().resume(List.of(state)).epochs(2).build()) {
            assertTrue(
                    l.resumed().report().contains("the same world goes on at batch 4"),
                    l.resumed().report());
            for (Batch b : l) {
                try (b) {
                    rest.add(describe(b));
                }
            }
        }
        assertEquals(whole.subList(4, whole.size()), rest);
    }

    @Test
    void resumingAndStartingAtABatchTogetherAreRefused() {
        LoaderState s =
                LoaderState.of(over(folder).batchSize(50).partition(0, 4).sampler(), 0, 4, 0, 3);
        IllegalArgumentException both = assertThrows(
                IllegalArgumentException.class,
                () -> over(folder).resume(List.of(s)).startBatch(2).build());
        assertTrue(both.getMessage().contains("not both"), both.getMessage());
    }

    @Test
    void aStateOverAnotherDatasetOfTheSameSizeIsRefusedNamingIt() {
        Dataset other = ImageFolder.scan(TestImages.imageFolder(tmp.resolve("other"), 1003, 5, 3));
        assertEquals(folder.size(), other.size());
        assertNotEquals(folder.fingerprint(), other.fingerprint(), "other labels: another dataset");
        assertEquals(
                folder.fingerprint(), ImageFolder.scan(tmp.resolve("folder")).fingerprint());
        LoaderState state;
        try (Loader l = over(folder).batchSize(50).build()) {
            l.next().close();
            state = l.state();
        }
        assertEquals(folder.fingerprint(), state.dataset());
        assertEquals(state, LoaderState.parse(state.toJson(), "state").get(0));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> over(other).resume(List.of(state)).build());
        assertTrue(
                e.getMessage().contains("saved over another dataset (dataset=" + folder.fingerprint()), e.getMessage());
    }

    private static String describe(Batch b) {
        StringBuilder s = new StringBuilder(b.epoch() + "/" + b.batchIndex());
        for (int i = 0; i < b.size(); i++) {
            s.append(' ').append(b.index(i)).append(b.isPadding(i) ? "p" : "");
        }
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(b.pixels().asByteBuffer());
        return s.append(" crc ").append(crc.getValue()).toString();
    }
}
