package io.stoke.loader;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.decode.BombsAccess;
import io.stoke.loader.decode.SampleTransform;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.BadImages;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LoaderTest {
    static final TransformSpec SMALL = TransformSpec.defaults().withResize(48, 40);

    @TempDir
    static Path tmp;

    static Path data;
    static Dataset dataset;

    @BeforeAll
    static void makeData() {
        data = TestImages.imageFolder(tmp.resolve("data"), 37, 3, 1);
        dataset = ImageFolder.scan(data);
    }

    private static Loader.Builder loader() {
        return Loader.builder(dataset).transform(SMALL).batchSize(8).workers(3).slots(3);
    }

    private static long crc(MemorySegment s) {
        CRC32 crc = new CRC32();
        crc.update(s.asByteBuffer());
        return crc.getValue();
    }

    /** Every batch as (epoch, batchIndex, indices, labels, pixel checksum). */
    private static List<String> drain(Loader loader) {
        List<String> out = new ArrayList<>();
        for (Batch b : loader) {
            try (b) {
                long[] idx = b.indices().toArray(ValueLayout.JAVA_LONG);
                int[] labels = b.labels().toArray(ValueLayout.JAVA_INT);
                out.add(b.epoch() + "/" + b.batchIndex() + " " + Arrays.toString(idx) + " " + Arrays.toString(labels)
                        + " " + crc(b.pixels()));
            }
        }
        return out;
    }

    @Test
    void imageFolderScanSortsClassesAndFiles() {
        assertEquals(37, dataset.size());
        assertEquals(List.of("class00", "class01", "class02"), dataset.classNames());
        assertEquals("class00/img0000.jpg", dataset.path(0));
        assertEquals(0, dataset.label(0));
        assertEquals(2, dataset.label(dataset.size() - 1));
    }

    /** The nice value of each live thread of this process named {@code stoke-worker-*}, read from /proc. */
    private static List<Integer> workerNiceValues() throws IOException {
        List<Integer> nice = new ArrayList<>();
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : tasks.toList()) {
                try {
                    if (Files.readString(task.resolve("comm")).strip().startsWith("stoke-worker-")) {
                        String stat = Files.readString(task.resolve("stat"));
                        // Fields after the command's closing parenthesis start at field 3 (state); nice is field 19.
                        nice.add(Integer.parseInt(
                                stat.substring(stat.lastIndexOf(')') + 2).split(" ")[19 - 3]));
                    }
                } catch (NoSuchFileException gone) {
                    // a thread that ended meanwhile
                }
            }
        }
        return nice;
    }

    @Test
    void workersRunAtTheNiceValueAskedForAndDeliverTheSameBatches() throws Exception {
        Assumptions.assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "no /proc here");
        List<String> plain;
        try (Loader loader = loader().shuffle(true).seed(5).build()) {
            plain = drain(loader);
        }
        try (Loader loader = loader().shuffle(true).seed(5).workerNice(7).build()) {
            assertEquals(plain, drain(loader));
        }
        // Thread.join returns before the OS thread has exited: under load the closed loaders'
        // workers can linger in /proc/self/task for a moment, and would be counted below.
        for (long deadline = System.nanoTime() + 10_000_000_000L;
                !workerNiceValues().isEmpty() && System.nanoTime() < deadline; ) {
            Thread.sleep(10);
        }
        try (Loader loader = loader().epochs(0).workerNice(7).build()) {
            loader.next().close();
            // A worker sets its priority as it starts, which may come after another filled the first batch.
            List<Integer> nice = workerNiceValues();
            for (long deadline = System.nanoTime() + 10_000_000_000L;
                    nice.stream().filter(n -> n == 7).count() < 3 && System.nanoTime() < deadline;
                    nice = workerNiceValues()) {
                Thread.sleep(10);
            }
            assertEquals(3, nice.stream().filter(n -> n == 7).count(), "worker nice values " + nice);
        }
        assertThrows(IllegalArgumentException.class, () -> loader().workerNice(20));
        assertThrows(IllegalArgumentException.class, () -> loader().workerNice(-1));
    }

    @Test
    void everySampleExactlyOncePerEpochInOrder() {
        try (Loader loader = loader().shuffle(true).seed(3).epochs(3).build()) {
            int[][] seen = new int[3][dataset.size()];
            long expectedSequence = 0;
            for (Batch b : loader) {
                try (b) {
                    assertEquals(expectedSequence++, b.sequence());
                    assertEquals((b.sequence() % 5), b.batchIndex());
                    assertEquals(b.batchIndex() == 4 ? 5 : 8, b.size());
                    assertArrayEquals(new long[] {b.size(), 40, 40, 3}, b.shape());
                    for (int i = 0; i < b.size(); i++) {
                        int sample = (int) b.index(i);
                        seen[(int) b.epoch()][sample]++;
                        assertEquals(dataset.label(sample), b.label(i));
                        assertEquals(SampleStatus.OK, b.status(i));
                    }
                }
            }
            for (int[] epoch : seen) {
                for (int count : epoch) {
                    assertEquals(1, count);
                }
            }
            assertEquals(15, loader.stats().batches());
            assertEquals(111, loader.stats().images());
        }
    }

    @Test
    void sameSeedGivesIdenticalBatches() {
        List<String> a;
        List<String> b;
        try (Loader l = loader().shuffle(true).seed(11).epochs(2).workers(3).build()) {
            a = drain(l);
        }
        try (Loader l = loader().shuffle(true).seed(11).epochs(2).workers(1).build()) {
            b = drain(l);
        }
        assertEquals(a, b);
        try (Loader l = loader().shuffle(true).seed(12).epochs(2).build()) {
            assertNotEquals(a, drain(l));
        }
    }

    @Test
    void pixelsAreTheTransformOfTheirSample() {
        try (Loader loader = loader().shuffle(true).seed(5).build();
                Arena arena = Arena.ofConfined();
                SampleTransform direct = new SampleTransform(dataset, SMALL)) {
            MemorySegment expected = arena.allocate(SMALL.sampleBytes());
            for (Batch b : loader) {
                try (b) {
                    for (int i = 0; i < b.size(); i++) {
                        assertEquals(SampleStatus.OK, direct.apply((int) b.index(i), expected, 0));
                        assertEquals(-1, expected.mismatch(b.sample(i)), "sample " + b.index(i));
                    }
                }
            }
        }
    }

    @Test
    void partitionsTogetherDeliverEachSampleOnceLeavingThePaddingOutAndEveryRankAsManyBatches() {
        int[] seen = new int[dataset.size()];
        int world = 3;
        assertTrue(dataset.size() % world != 0, "the test needs a dataset that does not split evenly");
        Set<Long> batchCounts = new HashSet<>();
        int padded = 0;
        for (int rank = 0; rank < world; rank++) {
            try (Loader l =
                    loader().partition(rank, world).shuffle(true).seed(9).build()) {
                long batches = 0;
                for (Batch b : l) {
                    try (b) {
                        batches++;
                        for (int i = 0; i < b.size(); i++) {
                            assertEquals(i >= b.size() - b.paddedCount(), b.isPadding(i));
                            assertEquals(
                                    l.sampler()
                                            .isPadding((int) b.batchIndex()
                                                            * l.sampler().batchSize()
                                                    + i),
                                    b.isPadding(i));
                            if (b.isPadding(i)) {
                                padded++;
                            } else {
                                seen[(int) b.index(i)]++;
                            }
                        }
                    }
                }
                batchCounts.add(batches);
            }
        }
        assertEquals(1, batchCounts.size(), "ranks took different numbers of batches: " + batchCounts);
        assertEquals(world - dataset.size() % world, padded);
        for (int c : seen) {
            assertEquals(1, c);
        }
    }

    @Test
    void aConsumerHoldingEverySlotStallsTheWorkersUntilItReleases() throws Exception {
        try (Loader loader = loader().slots(2).epochs(4).build()) {
            Batch first = loader.next();
            Batch second = loader.next();
            // Both slots are held: the worker that drew the next batch's first sample waits in
            // SlotRing.acquire for a free one. Seen there (the positive signal), nothing more may
            // have been published.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!aWorkerWaitsForASlot() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertTrue(aWorkerWaitsForASlot(), "no worker reached the wait for a free slot");
            assertEquals(2, loader.stats().batches());
            assertEquals(-1, loader.ring().pollReady(), "a batch was published with no free slot");
            first.close();
            Batch third = loader.next(); // progress resumes once a slot is back
            assertEquals(2, third.sequence());
            second.close();
            third.close();
            int rest = 0;
            for (Batch b : loader) {
                try (b) {
                    rest++;
                }
            }
            assertEquals(4 * 5 - 3, rest);
        }
    }

    @Test
    void closingMidEpochStopsEveryWorkerAndInvalidatesBatches() {
        Loader loader = loader().epochs(0).slots(3).build(); // endless
        Batch held = loader.next();
        MemorySegment pixels = held.pixels();
        loader.close();
        assertTrue(loader.workersStopped());
        assertThrows(IllegalStateException.class, () -> pixels.get(JAVA_BYTE, 0), "freed memory was readable");
        assertThrows(IllegalStateException.class, held::pixels);
        assertThrows(IllegalStateException.class, loader::next);
        held.close(); // harmless after the loader is gone
        loader.close();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            assertFalse(t.getName().startsWith("stoke-worker") && t.isAlive(), "worker still running: " + t);
        }
    }

    @Test
    void aClosedBatchRefusesAccessEvenThroughKeptSegments() {
        try (Loader loader = loader().build()) {
            Batch b = loader.next();
            MemorySegment kept = b.pixels();
            MemorySegment labels = b.labels();
            b.close();
            assertThrows(IllegalStateException.class, () -> kept.get(JAVA_BYTE, 0));
            assertThrows(IllegalStateException.class, () -> labels.get(JAVA_BYTE, 0));
            assertThrows(IllegalStateException.class, b::size);
        }
    }

    @Test
    void floatOutputHasChannelsFirstShape() {
        TransformSpec f32 = SMALL.withOutput(TransformSpec.Output.FLOAT32_CHW);
        try (Loader loader = loader().transform(f32).build();
                Batch b = loader.next()) {
            assertArrayEquals(new long[] {8, 3, 40, 40}, b.shape());
            assertEquals(8L * 3 * 40 * 40 * 4, b.pixels().byteSize());
        }
    }

    /** One bad file of each kind, in its own dataset, with the reason each must give. */
    static Path badData() throws Exception {
        Path root = tmp.resolve("bad");
        if (Files.exists(root)) {
            return root;
        }
        Path cls = Files.createDirectories(root.resolve("a"));
        byte[] good = TestImages.jpeg(120, 90, 77);
        for (int i = 0; i < 6; i++) {
            Files.write(cls.resolve("good" + i + ".jpg"), TestImages.jpeg(100 + i, 80, i));
        }
        Files.write(cls.resolve("empty.jpg"), new byte[0]);
        Files.write(cls.resolve("truncated.jpg"), Arrays.copyOf(good, good.length / 2));
        Files.write(cls.resolve("notjpeg.jpg"), "this is plain text, not an image".getBytes());
        Files.write(
                cls.resolve("png.jpg"),
                new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H'});
        Files.write(cls.resolve("bomb.jpg"), BombsAccess.withDimensions(good, 60000, 60000));
        Files.write(cls.resolve("vanished.jpg"), good);
        return root;
    }

    /** Indexes the bad set, then deletes one file: unreadable, as a file removed after scanning is. */
    static Dataset scanBadData() throws Exception {
        Path root = badData();
        Files.write(root.resolve("a/vanished.jpg"), TestImages.jpeg(50, 50, 1));
        Dataset bad = ImageFolder.scan(root);
        Files.delete(root.resolve("a/vanished.jpg"));
        return bad;
    }

    static final String[][] EXPECTED = {
        {"empty.jpg", "EMPTY_FILE"},
        {"truncated.jpg", "TRUNCATED"},
        {"notjpeg.jpg", "NOT_IMAGE"},
        {"png.jpg", BadImages.CUT_PNG},
        {"bomb.jpg", "TOO_LARGE"},
        {"vanished.jpg", "READ_ERROR"},
    };

    /**
     * A folder or a pipe named like an image is listed as a sample (names are not stat'ed); reading
     * it says what it is. Before, a pipe's open waited forever for a writer, and a folder's end on
     * ext4 (2^63 - 1) was "too large", or, read with no budget (bench's page-cache warm-up), a
     * native allocation of that size that failed the JVM. A link to nothing (into a volume not
     * mounted) names where it points, not "No such file or directory" of a file the listing saw.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aFolderOrAPipeNamedLikeAnImageIsAReadErrorSayingWhatItIsAndNeverWaits() throws Exception {
        Path root = tmp.resolve("not-files");
        Path cls = Files.createDirectories(root.resolve("a"));
        for (int i = 0; i < 3; i++) {
            Files.write(cls.resolve("good" + i + ".jpg"), TestImages.jpeg(60 + i, 50, i));
        }
        Files.createDirectories(cls.resolve("folder.jpg"));
        Process mkfifo = new ProcessBuilder("mkfifo", cls.resolve("pipe.jpg").toString())
                .inheritIO()
                .start();
        assertEquals(0, mkfifo.waitFor(), "mkfifo");
        Path unmounted = tmp.resolve("volume-not-mounted").resolve("x.jpg");
        Files.createSymbolicLink(cls.resolve("link.jpg"), unmounted);
        Dataset dataset = ImageFolder.scan(root);
        assertEquals(6, dataset.size());
        try (Loader loader = Loader.builder(dataset)
                .transform(SMALL)
                .batchSize(5)
                .workers(2)
                .onError(ErrorPolicy.SKIP)
                .build()) {
            List<String> skipped = new ArrayList<>();
            for (Batch b : loader) {
                try (b) {
                    for (SampleError e : b.skipped()) {
                        assertEquals(SampleStatus.READ_ERROR, e.status(), e.toString());
                        skipped.add(e.toString());
                    }
                }
            }
            assertEquals(3, skipped.size(), skipped.toString());
            assertTrue(
                    skipped.stream()
                            .anyMatch(m -> m.contains("link.jpg")
                                    && m.contains("it is a link to " + unmounted + ", which does not exist")),
                    skipped.toString());
            assertTrue(
                    skipped.stream()
                            .anyMatch(m -> m.contains("folder.jpg") && m.contains("it is a folder, not a file")),
                    skipped.toString());
            assertTrue(
                    skipped.stream()
                            .anyMatch(m -> m.contains("pipe.jpg") && m.contains("it is a pipe (FIFO), not a file")),
                    skipped.toString());
        }
        // Read with no budget, as bench's warm-up did: a read error, not a 2^63-byte allocation.
        try (var reader = dataset.reader(Long.MAX_VALUE)) {
            int folder = -1;
            for (int i = 0; i < dataset.size(); i++) {
                if (dataset.path(i).endsWith("folder.jpg")) {
                    folder = i;
                }
            }
            assertEquals(SampleStatus.READ_ERROR, reader.read(folder));
        }
    }

    @Test
    void badFilesAreSkippedWithTheirReasonUnderSkip() throws Exception {
        Dataset bad = scanBadData();
        try (Loader loader = Loader.builder(bad)
                .transform(SMALL)
                .batchSize(4)
                .workers(2)
                .onError(ErrorPolicy.SKIP)
                .build()) {
            List<SampleError> skipped = new ArrayList<>();
            int delivered = 0;
            for (Batch b : loader) {
                try (b) {
                    delivered += b.size();
                    for (SampleError e : b.skipped()) {
                        skipped.add(e);
                        assertEquals(e.status(), b.status(e.position()));
                        MemorySegment px = b.sample(e.position());
                        for (long i = 0; i < px.byteSize(); i++) {
                            assertEquals(0, px.get(JAVA_BYTE, i), "skipped sample not zeroed");
                        }
                    }
                }
            }
            assertEquals(12, delivered);
            assertEquals(EXPECTED.length, skipped.size(), skipped.toString());
            for (String[] e : EXPECTED) {
                SampleError found = skipped.stream()
                        .filter(s -> s.path().endsWith(e[0]))
                        .findFirst()
                        .orElseThrow(() -> new AssertionError(e[0] + " not reported: " + skipped));
                assertEquals(e[1], found.status().name(), found.toString());
                assertTrue(found.toString().contains(e[0]), found.toString());
            }
            assertEquals(EXPECTED.length, loader.stats().skipped());
        }
    }

    @Test
    void badFilesFailTheirBatchUnderFailAndTheLoaderGoesOn() throws Exception {
        Dataset bad = scanBadData();
        try (Loader loader =
                Loader.builder(bad).transform(SMALL).batchSize(1).workers(2).build()) {
            List<String> failures = new ArrayList<>();
            int good = 0;
            while (true) {
                try {
                    Batch b = loader.next();
                    if (b == null) {
                        break;
                    }
                    try (b) {
                        good++;
                    }
                } catch (SampleException e) {
                    assertEquals(1, e.errors().size());
                    failures.add(e.getMessage());
                }
            }
            assertEquals(6, good);
            assertEquals(EXPECTED.length, failures.size());
            for (String[] e : EXPECTED) {
                assertTrue(failures.stream().anyMatch(m -> m.contains(e[0])), e[0] + " missing from " + failures);
            }
            assertTrue(
                    failures.stream().anyMatch(m -> m.contains("vanished.jpg") && m.contains("No such file")),
                    failures.toString());
            assertTrue(
                    failures.stream().anyMatch(m -> m.contains("bomb.jpg") && m.contains("60000x60000")),
                    failures.toString());
        }
    }

    /** Drains an all-bad loader; returns what it threw at the end and the files each batch named. */
    private static NoSampleDecodedException drainAllBad(Loader loader, List<SampleError> named) {
        while (true) {
            try {
                Batch b = loader.next();
                if (b == null) {
                    fail("an epoch in which nothing decoded ended normally");
                }
                try (b) {
                    named.addAll(b.skipped());
                }
            } catch (SampleException e) {
                named.addAll(e.errors());
            } catch (NoSampleDecodedException e) {
                return e;
            }
        }
    }

    @Test
    void anEndlessLoaderOverADatasetWhereNothingDecodesStopsAfterOneEpochUnderBothPolicies() {
        Dataset bad = ImageFolder.scan(BadImages.allBadFolder(tmp.resolve("all-bad")));
        for (ErrorPolicy policy : ErrorPolicy.values()) {
            List<SampleError> named = new ArrayList<>();
            NoSampleDecodedException e = assertTimeoutPreemptively(
                    Duration.ofSeconds(20),
                    () -> {
                        try (Loader loader = Loader.builder(bad)
                                .transform(SMALL)
                                .batchSize(2)
                                .workers(2)
                                .slots(2)
                                .epochs(0)
                                .onError(policy)
                                .build()) {
                            NoSampleDecodedException thrown = drainAllBad(loader, named);
                            assertSame(thrown, loader.failure(), "the producer side reports it too");
                            // It stays the loader's answer: no call after it spins or returns a batch.
                            assertSame(thrown, assertThrows(NoSampleDecodedException.class, loader::next));
                            return thrown;
                        }
                    },
                    policy.toString());
            Map<String, String> expected = BadImages.EXPECTED;
            assertEquals(0, e.epoch());
            assertEquals(expected.size(), e.failed());
            // Every file was named once, by its batch, with its reason, and again in the message.
            assertEquals(expected.size(), named.size(), named.toString());
            for (var x : expected.entrySet()) {
                SampleError found = named.stream()
                        .filter(s -> s.path().endsWith(x.getKey()))
                        .findFirst()
                        .orElseThrow(() -> new AssertionError(x.getKey() + " not named: " + named));
                assertEquals(x.getValue(), found.status().name(), found.toString());
                assertTrue(e.getMessage().contains(found.toString()), e.getMessage());
            }
        }
    }

    /**
     * Repeated: the consumer may ask again the moment it has the epoch's last batch, while the
     * worker that published it is still in its bookkeeping; it must get the error, not an end.
     */
    @Test
    void aFiniteRunWhereNothingDecodesEndsInTheSameError() {
        Dataset bad = ImageFolder.scan(BadImages.allBadFolder(tmp.resolve("all-bad")));
        for (int run = 0; run < 50; run++) {
            for (ErrorPolicy policy : ErrorPolicy.values()) {
                try (Loader loader = Loader.builder(bad)
                        .transform(SMALL)
                        .batchSize(4)
                        .workers(2)
                        .onError(policy)
                        .build()) {
                    List<SampleError> named = new ArrayList<>();
                    assertEquals(9, drainAllBad(loader, named).failed(), "run " + run + " " + policy);
                    assertEquals(9, named.size());
                }
            }
        }
    }

    @Test
    void oneDecodableFileKeepsAnEndlessLoaderGoing() throws Exception {
        Path root = BadImages.allBadFolder(tmp.resolve("one-good"));
        Files.write(root.resolve("broken/zz-good.jpg"), TestImages.jpeg(64, 48, 3));
        Dataset mixed = ImageFolder.scan(root);
        try (Loader loader = Loader.builder(mixed)
                .transform(SMALL)
                .batchSize(4)
                .workers(2)
                .epochs(0)
                .onError(ErrorPolicy.SKIP)
                .build()) {
            long images = 0;
            for (int k = 0; k < 30; k++) { // ten epochs of three batches
                try (Batch b = loader.next()) {
                    images += b.size() - b.skipped().size();
                }
            }
            assertEquals(10, images);
            assertNull(loader.failure());
        }
    }

    @Test
    void aProducerWithoutConsumerSeesTheFailureOnItsOwn() throws Exception {
        Dataset bad = ImageFolder.scan(BadImages.allBadFolder(tmp.resolve("all-bad")));
        try (Loader loader = Loader.builder(bad)
                .transform(SMALL)
                .batchSize(16)
                .workers(2)
                .epochs(0)
                .build()) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (loader.failure() == null && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertInstanceOf(NoSampleDecodedException.class, loader.failure());
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!loader.workersStopped() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertTrue(loader.workersStopped(), "the workers stop on their own, no close() needed");
        }
    }

    static final TransformSpec TRAIN = TransformSpec.defaults().withTrain(40, RandomResizedCrop.defaults());

    /**
     * The training transform's randomness depends on (seed, epoch, dataset index) alone: the same
     * batches whatever the number of workers, a resumed run (startEpoch) reproduces its epoch, and
     * each batch's pixels are what one SampleTransform makes of that sample in that epoch.
     */
    @Test
    void trainBatchesAreAFunctionOfSeedEpochAndIndexOnly() {
        List<String> three;
        try (Loader l = loader().transform(TRAIN)
                .shuffle(true)
                .seed(21)
                .epochs(2)
                .workers(3)
                .build()) {
            three = drain(l);
        }
        try (Loader l = loader().transform(TRAIN)
                .shuffle(true)
                .seed(21)
                .epochs(2)
                .workers(1)
                .build()) {
            assertEquals(three, drain(l));
        }
        try (Loader l = loader().transform(TRAIN)
                .shuffle(true)
                .seed(21)
                .startEpoch(1)
                .epochs(1)
                .workers(2)
                .build()) {
            assertEquals(three.subList(three.size() / 2, three.size()), drain(l), "a resumed epoch 1");
        }
        try (Loader l =
                loader().transform(TRAIN).shuffle(true).seed(22).epochs(2).build()) {
            assertNotEquals(three, drain(l));
        }
        try (Loader loader = loader().transform(TRAIN)
                        .shuffle(true)
                        .seed(21)
                        .startEpoch(1)
                        .build();
                Arena arena = Arena.ofConfined();
                SampleTransform direct = new SampleTransform(dataset, TRAIN, 21)) {
            MemorySegment expected = arena.allocate(TRAIN.sampleBytes());
            MemorySegment epoch0 = arena.allocate(TRAIN.sampleBytes());
            int differ = 0;
            for (Batch b : loader) {
                try (b) {
                    for (int i = 0; i < b.size(); i++) {
                        assertEquals(SampleStatus.OK, direct.apply((int) b.index(i), 1, expected, 0));
                        assertEquals(-1, expected.mismatch(b.sample(i)), "sample " + b.index(i));
                        direct.apply((int) b.index(i), 0, epoch0, 0);
                        differ += epoch0.mismatch(expected) >= 0 ? 1 : 0;
                    }
                }
            }
            assertTrue(differ > 30, "each epoch draws new crops: only " + differ + " of 37 samples changed");
        }
    }

    /** Stopped after K batches of epoch e, a run resumed at (e, K) delivers exactly the rest, in order. */
    @Test
    void aRunResumedMidEpochDeliversTheRestOfItAsTheUninterruptedRunDid() {
        List<String> whole;
        try (Loader l =
                loader().transform(TRAIN).shuffle(true).seed(4).epochs(3).build()) {
            whole = drain(l);
        }
        assertEquals(15, whole.size());
        for (int k : new int[] {1, 3, 4}) {
            try (Loader l = loader().transform(TRAIN)
                    .shuffle(true)
                    .seed(4)
                    .startEpoch(1)
                    .startBatch(k)
                    .epochs(2)
                    .workers(2)
                    .build()) {
                assertEquals(10 - k, l.totalBatches());
                assertEquals(whole.subList(5 + k, 15), drain(l), "resumed at batch " + k + " of epoch 1");
            }
        }
        IllegalArgumentException outside = assertThrows(
                IllegalArgumentException.class, () -> loader().startBatch(5).build());
        assertTrue(outside.getMessage().contains("outside the epoch's 5 batches"), outside.getMessage());
    }

    @Test
    void badFilesThroughTheTrainTransformGiveTheirReasons() throws Exception {
        Dataset bad = scanBadData();
        try (Loader loader = Loader.builder(bad)
                .transform(TRAIN)
                .batchSize(4)
                .workers(2)
                .onError(ErrorPolicy.SKIP)
                .build()) {
            List<SampleError> skipped = new ArrayList<>();
            int good = 0;
            for (Batch b : loader) {
                try (b) {
                    skipped.addAll(b.skipped());
                    good += b.size() - b.skipped().size();
                }
            }
            assertEquals(6, good);
            for (String[] e : EXPECTED) {
                SampleError found = skipped.stream()
                        .filter(x -> x.path().endsWith(e[0]))
                        .findFirst()
                        .orElseThrow(() -> new AssertionError(e[0] + " not reported: " + skipped));
                assertEquals(e[1], found.status().name(), found.toString());
            }
        }
        Dataset allBad = ImageFolder.scan(BadImages.allBadFolder(tmp.resolve("all-bad-train")));
        try (Loader loader = Loader.builder(allBad)
                .transform(TRAIN)
                .batchSize(4)
                .workers(2)
                .epochs(0)
                .build()) {
            List<SampleError> named = new ArrayList<>();
            assertEquals(9, drainAllBad(loader, named).failed());
            for (var x : BadImages.EXPECTED.entrySet()) {
                assertTrue(
                        named.stream()
                                .anyMatch(n -> n.path().endsWith(x.getKey())
                                        && n.status().name().equals(x.getValue())),
                        x + " in " + named);
            }
        }
    }

    /** Whether a Stoke worker thread is inside {@code SlotRing.acquire}: waiting for a free slot. */
    private static boolean aWorkerWaitsForASlot() {
        return Thread.getAllStackTraces().entrySet().stream()
                .filter(e -> e.getKey().getName().startsWith("stoke-worker-"))
                .anyMatch(e -> Arrays.stream(e.getValue())
                        .anyMatch(f -> f.getClassName().equals("io.stoke.ring.SlotRing")
                                && f.getMethodName().equals("acquire")));
    }
}
