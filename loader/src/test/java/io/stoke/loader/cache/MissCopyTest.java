package io.stoke.loader.cache;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.decode.JpegDecoder;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.decode.SampleTransform;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.DecodedImage;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A worker copies the JPEG it missed while the loader lets it, as it decodes it: the entry is
 * filed (restart markers, the original's pixels), the sample's pixels are the uncached ones, no
 * filler is asked, and the next read is a hit. While the loader does not, the fillers are asked and the worker copies nothing. A
 * loader whose consumer lags fills its cache from its workers, every batch the uncached one's.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class MissCopyTest {
    @org.junit.jupiter.api.io.TempDir
    Path tmp;

    private final List<String> said = new CopyOnWriteArrayList<>();

    @BeforeEach
    void needsTheLibrary() {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
    }

    /** {@code n} JPEGs (every third progressive) in 2 classes, and one CMYK file, kept as it is. */
    private Path data(int n) throws IOException {
        Path root = tmp.resolve("data");
        SplittableRandom r = new SplittableRandom(11);
        for (int i = 0; i < n; i++) {
            Path dir = Files.createDirectories(root.resolve("c" + i % 2));
            int w = 40 + r.nextInt(220);
            int h = 40 + r.nextInt(180);
            int flags = i % 3 == 0 ? TurboJpeg.TJFLAG_PROGRESSIVE : 0;
            byte[] jpeg = TestImages.jpeg(TestImages.rgb(w, h, i), w, h, 3, 88, TurboJpeg.TJSAMP_420, flags);
            Files.write(dir.resolve(String.format("i%02d.jpg", i)), jpeg);
        }
        byte[] cmyk = new byte[64 * 48 * 4];
        Arrays.fill(cmyk, (byte) 70);
        Files.write(root.resolve("c1").resolve("cmyk.jpg"), TestImages.jpeg(cmyk, 64, 48, 4, 90, 0, 0));
        return root;
    }

    private long entries() throws IOException {
        try (Stream<Path> s = Files.walk(tmp.resolve("cache"))) {
            return s.filter(p -> p.toString().endsWith(".stc")).count();
        }
    }

    private static boolean hasRestartMarkers(MemorySegment jpeg, long length) {
        for (long i = 0; i + 1 < length; i++) {
            if (jpeg.get(ValueLayout.JAVA_BYTE, i) == (byte) 0xFF
                    && jpeg.get(ValueLayout.JAVA_BYTE, i + 1) == (byte) 0xDD) {
                return true; // DRI: the copy's restart interval
            }
        }
        return false;
    }

    /** The whole image's pixels, decoded from {@code jpeg[0, length)}. */
    private static byte[] pixels(JpegDecoder decoder, MemorySegment jpeg, long length) {
        assertEquals(SampleStatus.OK, decoder.decode(jpeg, length), decoder.message());
        DecodedImage d = decoder.decoded();
        return d.pixels().asSlice(0, 4L * d.width() * d.height()).toArray(ValueLayout.JAVA_BYTE);
    }

    /**
     * Each sample of {@code d} through a transform of the cache's reader and through one of the
     * dataset's own, epoch {@code epoch}: the same bytes.
     */
    private static void assertTheUncachedPixels(Dataset d, TransformSpec spec, RestartCache cache, long epoch) {
        try (Arena arena = Arena.ofConfined();
                SampleTransform plain = new SampleTransform(d, spec, 5);
                SampleTransform cached = new SampleTransform(d, spec, 5, cache.reader(d, spec.maxFileBytes()))) {
            MemorySegment a = arena.allocate(spec.sampleBytes());
            MemorySegment b = arena.allocate(spec.sampleBytes());
            for (int s = 0; s < d.size(); s++) {
                assertEquals(SampleStatus.OK, plain.apply(s, epoch, a, 0), plain.message());
                assertEquals(SampleStatus.OK, cached.apply(s, epoch, b, 0), cached.message());
                assertEquals(-1, a.mismatch(b), "sample " + s + ", epoch " + epoch);
            }
        }
    }

    @Test
    void aWorkerThatMayCopyCopiesAsItDecodesFilesTheCopyAndAsksNoFiller() throws Exception {
        io.stoke.loader.source.FileDataset d = ImageFolder.scan(data(12));
        for (TransformSpec spec : List.of(
                TransformSpec.defaults().withTrain(40, RandomResizedCrop.defaults()), TransformSpec.defaults())) {
            try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add);
                    JpegDecoder decoder = new JpegDecoder(TransformSpec.defaults());
                    Arena arena = Arena.ofConfined()) {
                cache.pace(() -> false, () -> true, 2); // the fillers' gate shut: only workers copy
                assertTheUncachedPixels(d, spec, cache, 0);
                assertEquals(12, cache.copiedByWorkers.sum(), "every JPEG copied as it was decoded");
                RestartCache.Stats stats = cache.stats();
                assertEquals(12, stats.copied(), stats.toString());
                assertEquals(12, stats.copiedByWorkers(), "the stats say whose copies they are: " + stats);
                assertEquals(0, stats.originals(), "the CMYK file, which the decode did not copy, is the fillers'");
                assertFalse(cache.awaitFilled(300), "its request waits for the fillers' gate");
                assertEquals(12, entries());
                try (SampleReader reader = cache.reader(d, spec.maxFileBytes())) {
                    for (int s = 0; s < d.size(); s++) {
                        assertEquals(SampleStatus.OK, reader.read(s), reader.message());
                        boolean cmyk = d.path(s).endsWith("cmyk.jpg");
                        assertEquals(!cmyk, hasRestartMarkers(reader.bytes(), reader.length()), "sample " + s);
                        byte[] file = Files.readAllBytes(d.resolve(s));
                        MemorySegment original = arena.allocate(file.length);
                        MemorySegment.copy(file, 0, original, ValueLayout.JAVA_BYTE, 0, file.length);
                        assertArrayEquals(
                                pixels(decoder, original, file.length),
                                pixels(decoder, reader.bytes(), reader.length()),
                                "sample " + s + ": the copy filed decodes to the original's pixels");
                        reader.done();
                    }
                }
                assertEquals(12, cache.stats().hits(), "the second read: a hit for every copy");
                assertTheUncachedPixels(d, spec, cache, 1);
            }
            try (Stream<Path> s = Files.walk(tmp.resolve("cache"))) {
                for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        assertEquals(List.of(), said);
    }

    @Test
    void aWorkerThatMayNotCopyAsksTheFillers() throws Exception {
        Dataset d = ImageFolder.scan(data(6));
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add)) {
            cache.pace(() -> false, () -> false, 1);
            try (SampleReader reader = cache.reader(d, TransformSpec.defaults().maxFileBytes())) {
                for (int s = 0; s < d.size(); s++) {
                    assertEquals(SampleStatus.OK, reader.read(s), reader.message());
                    assertFalse(hasRestartMarkers(reader.bytes(), reader.length()), "the original is read");
                    reader.done();
                }
            }
            assertEquals(0, cache.copiedByWorkers.sum());
            assertEquals(0, cache.stats().copiedByWorkers());
            assertFalse(cache.awaitFilled(300), "7 requests wait for the fillers' gate");
            assertEquals(0, entries());
        }
        assertEquals(List.of(), said);
    }

    /** One epoch's batches (indices, pixels' checksum), the consumer taking {@code lagMillis} per batch. */
    private static List<String> epoch(Dataset d, TransformSpec spec, RestartCache cache, long lagMillis)
            throws InterruptedException {
        List<String> out = new ArrayList<>();
        try (Loader l = Loader.builder(d)
                .transform(spec)
                .batchSize(4)
                .workers(2)
                .slots(4)
                .shuffle(true)
                .seed(3)
                .restartCache(cache)
                .build()) {
            for (Batch b : l) {
                try (b) {
                    out.add(BatchSums.of(b));
                }
                Thread.sleep(lagMillis);
            }
        }
        return out;
    }

    /**
     * An epoch of {@code d} whose consumer lags fills a new cache, mostly from the workers, and
     * gives the uncached batches; the next epoch reads every one of the {@code originals} as a hit.
     */
    private void assertALaggingConsumerFillsFromTheWorkers(Dataset d, int originals) throws Exception {
        TransformSpec train = TransformSpec.defaults().withTrain(40, RandomResizedCrop.defaults());
        List<String> uncached = epoch(d, train, null, 0);
        try (RestartCache cache = RestartCache.open(tmp.resolve("cache"), 1L << 30, said::add)) {
            assertEquals(uncached, epoch(d, train, cache, 40), "the epoch that fills it");
            assertTrue(cache.copiedByWorkers.sum() > 0, "the ready slots let the workers copy: " + cache.stats());
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(
                    originals,
                    cache.stats().copied() + cache.stats().originals(),
                    cache.stats().toString());
            assertTrue(
                    cache.stats().copiedByWorkers() <= cache.stats().copied(),
                    "every copy a worker counts it filed: " + cache.stats());
            assertEquals(uncached, epoch(d, train, cache, 0), "the epoch that reads it");
            assertEquals(originals, cache.stats().misses(), "only the first epoch missed");
        }
        assertEquals(List.of(), said);
    }

    @Test
    void aLoaderWhoseConsumerLagsFillsItsCacheFromItsWorkersWithEveryBatchTheUncachedOnes() throws Exception {
        assertALaggingConsumerFillsFromTheWorkers(ImageFolder.scan(data(40)), 41);
    }

    @Test
    void workersCopyTheMembersOfTarShardsTheyMissAsTheyLieInTheirShard() throws Exception {
        List<Path> images;
        try (Stream<Path> s = Files.walk(data(20))) {
            images = s.filter(Files::isRegularFile).sorted().toList();
        }
        Path out = Files.createDirectories(tmp.resolve("shards"));
        for (int shard = 0; shard < 2; shard++) {
            try (java.io.OutputStream os = Files.newOutputStream(out.resolve("s-" + shard + ".tar"));
                    TarArchiveOutputStream tar = new TarArchiveOutputStream(os)) {
                for (int i = shard; i < images.size(); i += 2) {
                    TestTars.member(tar, String.format("%03d.jpg", i), Files.readAllBytes(images.get(i)));
                    TestTars.member(tar, String.format("%03d.cls", i), new byte[] {(byte) ('0' + i % 2)});
                }
            }
        }
        try (Dataset d = Datasets.openLocal(out + "/s-{0..1}.tar")) {
            assertALaggingConsumerFillsFromTheWorkers(d, 21);
        }
    }
}
