package io.stoke.loader.cache;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.loader.transform.TransformSpec.DctScaling;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
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
import org.junit.jupiter.api.io.TempDir;

/**
 * The restart cache against the same loader without it: every batch the same bytes, at every DCT
 * scale, under both transforms, from the epoch that fills it, the next, and a new process's
 * (a new cache over the folder); a changed original and a damaged entry are never served; a full
 * budget is said once and changes nothing else.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RestartCacheTest {
    @TempDir
    Path tmp;

    private final List<String> said = new CopyOnWriteArrayList<>();

    @BeforeEach
    void needsTheLibrary() {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
    }

    /** 40 JPEGs of every sampling (a third progressive), one CMYK, in 3 classes. */
    private Path data() throws IOException {
        Path root = tmp.resolve("data");
        SplittableRandom r = new SplittableRandom(9);
        int[] sampling = {TurboJpeg.TJSAMP_420, TurboJpeg.TJSAMP_422, TurboJpeg.TJSAMP_444};
        for (int i = 0; i < 40; i++) {
            Path dir = Files.createDirectories(root.resolve("c" + i % 3));
            int w = 40 + r.nextInt(260);
            int h = 40 + r.nextInt(200);
            int flags = i % 3 == 0 ? TurboJpeg.TJFLAG_PROGRESSIVE : 0;
            byte[] jpeg = TestImages.jpeg(TestImages.rgb(w, h, i), w, h, 3, 87, sampling[i % 3], flags);
            Files.write(dir.resolve(String.format("i%02d.jpg", i)), jpeg);
        }
        byte[] cmyk = new byte[64 * 48 * 4];
        Arrays.fill(cmyk, (byte) 90);
        Files.write(root.resolve("c1").resolve("cmyk.jpg"), TestImages.jpeg(cmyk, 64, 48, 4, 90, 0, 0));
        return root;
    }

    private RestartCache cache(long budget) {
        return RestartCache.open(tmp.resolve("cache"), budget, said::add);
    }

    /** One epoch's batches: indices and the pixels' checksum, in order. */
    private static List<String> epoch(Dataset d, TransformSpec spec, long epoch, RestartCache cache) {
        List<String> out = new ArrayList<>();
        try (Loader l = Loader.builder(d)
                .transform(spec)
                .batchSize(6)
                .workers(2)
                .shuffle(true)
                .seed(5)
                .startEpoch(epoch)
                .restartCache(cache)
                .build()) {
            for (Batch b : l) {
                try (b) {
                    out.add(BatchSums.of(b));
                }
            }
        }
        return out;
    }

    private static final List<TransformSpec> SPECS = List.of(
            TransformSpec.defaults().withResize(48, 40),
            TransformSpec.defaults().withResize(48, 40).withDctScaling(DctScaling.ALL),
            TransformSpec.defaults().withTrain(40, RandomResizedCrop.defaults()).withDctScaling(DctScaling.NONE),
            TransformSpec.defaults().withTrain(40, RandomResizedCrop.defaults()));

    @Test
    void theCachedEpochsAreTheUncachedOnesAndANewProcessReadsTheCopiesAtOnce() throws Exception {
        Dataset d = ImageFolder.scan(data());
        try (RestartCache cache = cache(1L << 30)) {
            assertEquals(epoch(d, SPECS.get(0), 0, null), epoch(d, SPECS.get(0), 0, cache), "the epoch that fills it");
            assertTrue(cache.awaitFilled(60_000));
            RestartCache.Stats s = cache.stats();
            assertEquals(40, s.copied(), s.toString());
            assertEquals(1, s.originals(), "the CMYK file is read as it is: " + s);
            for (TransformSpec spec : SPECS) {
                for (long e = 1; e < 3; e++) {
                    assertEquals(epoch(d, spec, e, null), epoch(d, spec, e, cache), spec + " epoch " + e);
                }
            }
            assertEquals(41, cache.stats().misses(), "only the first epoch missed");
        }
        try (RestartCache again = cache(1L << 30)) {
            assertEquals(epoch(d, SPECS.get(3), 7, null), epoch(d, SPECS.get(3), 7, again));
            assertEquals(0, again.stats().misses(), "a new process's cache: every sample a hit");
            assertEquals(41, again.stats().hits());
        }
        assertEquals(List.of(), said);
    }

    /**
     * The folder's images, sorted by name, as two tar shards with {@code .cls} labels; a PNG
     * among them, never cached. {@code replaced}: the image whose member is replaced (null for none).
     */
    private Path shards(Path root, String dir, String replaced, byte[] with) throws IOException {
        List<Path> images;
        try (Stream<Path> s = Files.walk(root)) {
            images = s.filter(Files::isRegularFile).sorted().toList();
        }
        Path out = Files.createDirectories(tmp.resolve(dir));
        for (int shard = 0; shard < 2; shard++) {
            try (OutputStream os = Files.newOutputStream(out.resolve("s-" + shard + ".tar"));
                    TarArchiveOutputStream tar = new TarArchiveOutputStream(os)) {
                for (int i = shard; i < images.size(); i += 2) {
                    Path image = images.get(i);
                    String key = String.format("%03d", i);
                    byte[] bytes = image.getFileName().toString().equals(replaced) ? with : Files.readAllBytes(image);
                    TestTars.member(tar, key + ".jpg", bytes);
                    TestTars.member(tar, key + ".cls", Integer.toString(i % 3).getBytes(StandardCharsets.US_ASCII));
                }
                if (shard == 1) {
                    TestTars.member(tar, "png.png", png());
                    TestTars.member(tar, "png.cls", "0".getBytes(StandardCharsets.US_ASCII));
                }
            }
        }
        return out;
    }

    private static byte[] png() throws IOException {
        java.awt.image.BufferedImage image =
                new java.awt.image.BufferedImage(50, 30, java.awt.image.BufferedImage.TYPE_INT_RGB);
        for (int y = 0; y < 30; y++) {
            for (int x = 0; x < 50; x++) {
                image.setRGB(x, y, x * 5 << 16 | y * 8 << 8 | (x + y));
            }
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        javax.imageio.ImageIO.write(image, "png", out);
        return out.toByteArray();
    }

    @Test
    void tarShardsOfOriginalsAreCachedMemberByMemberAndGiveTheUncachedEpochs() throws Exception {
        Path root = data();
        Path dir = shards(root, "shards", null, null);
        String spec = dir + "/s-{0..1}.tar";
        try (Dataset d = Datasets.openLocal(spec)) {
            try (RestartCache cache = cache(1L << 30)) {
                assertEquals(epoch(d, SPECS.get(0), 0, null), epoch(d, SPECS.get(0), 0, cache), "the filling epoch");
                assertTrue(cache.awaitFilled(60_000));
                RestartCache.Stats s = cache.stats();
                assertEquals(40, s.copied(), s.toString());
                assertEquals(1, s.originals(), "the CMYK member is read as it is: " + s);
                assertEquals(41, s.misses(), "the PNG is never asked for: " + s);
                for (TransformSpec t : SPECS) {
                    assertEquals(epoch(d, t, 1, null), epoch(d, t, 1, cache), t.toString());
                }
                assertEquals(41, cache.stats().misses(), "only the first epoch missed");
            }
        }
        // A new process over the same shards: every member a hit.
        try (Dataset d = Datasets.openLocal(spec);
                RestartCache again = cache(1L << 30)) {
            assertEquals(epoch(d, SPECS.get(3), 4, null), epoch(d, SPECS.get(3), 4, again));
            assertEquals(0, again.stats().misses(), again.stats().toString());
            assertEquals(41, again.stats().hits(), again.stats().toString());
        }
        assertEquals(List.of(), said);
    }

    /**
     * A shard written again under its name with another image where one was, of the same length
     * at the same offset (a comment pads it): the member's place and length are the same, the
     * shard's version is not, and the old copy is never served.
     */
    @Test
    void aShardWrittenAgainIsNeverServedItsOldCopies() throws Exception {
        Path root = data();
        Path dir = shards(root, "shards", null, null);
        String spec = dir + "/s-{0..1}.tar";
        try (Dataset d = Datasets.openLocal(spec);
                RestartCache cache = cache(1L << 30)) {
            epoch(d, SPECS.get(0), 0, cache);
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(40, cache.stats().copied());
        }
        byte[] old = Files.readAllBytes(root.resolve("c1").resolve("i04.jpg"));
        byte[] other = TestImages.jpeg(TestImages.rgb(60, 50, 123), 60, 50, 3, 70, TurboJpeg.TJSAMP_420, 0);
        assertTrue(other.length + 4 <= old.length, other.length + " against " + old.length);
        byte[] padded = new byte[old.length];
        int pad = old.length - other.length; // a COM segment after SOI: FF FE, its length, then bytes
        padded[0] = (byte) 0xFF;
        padded[1] = (byte) 0xD8;
        padded[2] = (byte) 0xFF;
        padded[3] = (byte) 0xFE;
        padded[4] = (byte) ((pad - 2) >> 8);
        padded[5] = (byte) (pad - 2);
        System.arraycopy(other, 2, padded, 2 + pad, other.length - 2);
        Path moved = shards(root, "again", "i04.jpg", padded);
        for (int shard = 0; shard < 2; shard++) {
            Path file = dir.resolve("s-" + shard + ".tar");
            byte[] was = Files.readAllBytes(file);
            byte[] now = Files.readAllBytes(moved.resolve("s-" + shard + ".tar"));
            assertEquals(was.length, now.length, "the same layout");
            if (shard == 0) { // i04.jpg is image 12 of the sorted 41: shard 0
                assertFalse(Arrays.equals(was, now), "shard 0 holds the other image");
            }
            Files.write(file, now);
            Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis() + 5_000 + shard));
        }
        try (Dataset d = Datasets.openLocal(spec);
                RestartCache cache = cache(1L << 30)) {
            assertEquals(epoch(d, SPECS.get(0), 1, null), epoch(d, SPECS.get(0), 1, cache));
            assertEquals(41, cache.stats().misses(), "every member of a shard written again: " + cache.stats());
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(epoch(d, SPECS.get(3), 2, null), epoch(d, SPECS.get(3), 2, cache));
            assertEquals(41, cache.stats().misses(), "then read from their new copies: " + cache.stats());
        }
    }

    /**
     * Shards closed after their last loader while the filler still copies their members (as the
     * command line does: its cache closes at exit, after the dataset): the dataset closes at once,
     * and the filler drops what it can no longer read.
     */
    @Test
    void shardsClosedWhileTheFillerCopiesTheirMembersCloseAtOnce() throws Exception {
        Path dir = shards(data(), "shards", null, null);
        // The filler runs on the CPU the workers leave, so whether it is still at work when an epoch
        // ends is a race: rounds go on until three of them closed the shards under it (a round it
        // had already finished closes them after it, which must not fail either).
        int underTheFiller = 0;
        List<String> missed = new ArrayList<>();
        for (int round = 0; round < 30 && underTheFiller < 3; round++) {
            try (RestartCache cache = RestartCache.open(tmp.resolve("cache-" + round), 1L << 30, said::add)) {
                Dataset d = Datasets.openLocal(dir + "/s-{0..1}.tar");
                epoch(d, SPECS.get(0), round, cache);
                if (cache.stats().copied() < 40) {
                    underTheFiller++;
                } else {
                    missed.add(cache.stats().toString());
                }
                d.close(); // no member's memory is held by a native call: nothing to wait for, nothing fails
                assertTrue(cache.awaitFilled(60_000));
            }
        }
        assertTrue(underTheFiller > 0, "the filler had finished before every close: " + missed);
        assertEquals(List.of(), said);
    }

    @Test
    void openWalksNothingAndTheFillerCountsTheFolderAndRemovesDeadTemporaryFilesFirst() throws Exception {
        Dataset d = ImageFolder.scan(data());
        long filled;
        try (RestartCache cache = cache(1L << 30)) {
            epoch(d, SPECS.get(0), 0, cache);
            assertTrue(cache.awaitFilled(60_000));
            filled = cache.stats().usedBytes();
        }
        // A copy cut short by a process that is gone (no pid reaches 99999999: pid_max is 2^22 at most).
        Path dead = tmp.resolve("cache").resolve("00").resolve(".0000000000000000.stc.99999999.5eed.tmp");
        Files.createDirectories(dead.getParent());
        Files.write(dead, new byte[100]);
        try (RestartCache again = cache(1L << 30)) {
            assertTrue(Files.exists(dead), "open walks nothing");
            assertEquals(filled, again.stats().usedBytes(), "its bytes are the count's file as it stands");
            assertEquals(epoch(d, SPECS.get(0), 1, null), epoch(d, SPECS.get(0), 1, again));
            // The filler started with the first reader: its walk comes before any write.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); // a bound, not a timing
            while ((Files.exists(dead) || again.stats().usedBytes() < filled) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertFalse(Files.exists(dead), "the dead process's temporary file is removed");
            assertEquals(filled, again.stats().usedBytes(), "every entry counted against the budget");
        }
        assertEquals(List.of(), said);
    }

    /**
     * An entry is filed under the file's absolute path: the folder that {@code stoke cache} filled
     * from is read as hits through a list naming the same files by absolute path (how stoke.DataLoader
     * hands torchvision's ImageFolder to its producer), and a second folder of the same layout, each
     * file the same size and time, is never served the first folder's entries.
     */
    @Test
    void aFileIsOneOriginalWhicheverDatasetNamesItAndTwoFoldersOfOneLayoutAreTwo() throws Exception {
        Path root = data();
        try (RestartCache cache = cache(1L << 30)) {
            cache.fill(ImageFolder.scan(root), 2, n -> {});
            assertEquals(40, cache.stats().copied(), cache.stats().toString());
        }
        List<Path> files;
        try (Stream<Path> s = Files.walk(root)) {
            files = s.filter(Files::isRegularFile).sorted().toList();
        }
        List<String> lines = new ArrayList<>();
        for (Path f : files) {
            lines.add(f.toAbsolutePath() + " "
                    + f.getParent().getFileName().toString().substring(1));
        }
        Dataset listed = io.stoke.loader.source.ListFile.read(Files.write(tmp.resolve("list.txt"), lines));
        try (RestartCache cache = cache(1L << 30)) {
            assertEquals(epoch(listed, SPECS.get(3), 1, null), epoch(listed, SPECS.get(3), 1, cache));
            assertEquals(0, cache.stats().misses(), "the folder's entries serve the list: " + cache.stats());
            assertEquals(41, cache.stats().hits(), cache.stats().toString());
        }
        Path other = tmp.resolve("other");
        for (Path f : files) {
            Path copy = other.resolve(root.relativize(f));
            Files.createDirectories(copy.getParent());
            Files.copy(f, copy);
            Files.setLastModifiedTime(copy, Files.getLastModifiedTime(f));
        }
        try (RestartCache cache = cache(1L << 30)) {
            Dataset d = ImageFolder.scan(other);
            assertEquals(epoch(d, SPECS.get(0), 1, null), epoch(d, SPECS.get(0), 1, cache));
            assertEquals(41, cache.stats().misses(), "another folder's files are other originals: " + cache.stats());
            assertEquals(0, cache.stats().hits(), cache.stats().toString());
        }
    }

    /** A local shard is named by its absolute path, a store's object by its URL without the query. */
    @Test
    void aShardIsNamedByItsAbsolutePathOrItsUrl() {
        String here = Path.of("").toAbsolutePath().toString();
        assertEquals(here + "/shards/s-0.tar", ShardNames.nameOf("shards/s-0.tar"));
        assertEquals("/data/s-0.tar", ShardNames.nameOf("/data/s-0.tar"));
        assertEquals("s3://bucket/s-0.tar", ShardNames.nameOf("s3://bucket/s-0.tar?X-Amz-Signature=abc"));
        assertEquals("https://host/a/s-0.tar", ShardNames.nameOf("https://host/a/s-0.tar"));
    }

    @Test
    void aChangedOriginalOrADamagedEntryIsNeverServed() throws Exception {
        Path root = data();
        Dataset d = ImageFolder.scan(root);
        try (RestartCache cache = cache(1L << 30)) {
            epoch(d, SPECS.get(0), 0, cache);
            assertTrue(cache.awaitFilled(60_000));
        }
        // Another image under the same name, with another time.
        Path changed = root.resolve("c0").resolve("i03.jpg");
        Files.write(changed, TestImages.jpeg(TestImages.rgb(120, 90, 77), 120, 90, 3, 80, TurboJpeg.TJSAMP_420, 0));
        Files.setLastModifiedTime(changed, FileTime.fromMillis(System.currentTimeMillis() + 5_000));
        // A damaged entry: one byte of another file's copy flipped (the changed file's own entry, which
        // the walk's order once picked, would count one miss for both). An entry names its original.
        Path entry;
        try (Stream<Path> s = Files.walk(tmp.resolve("cache"))) {
            entry = s.filter(p -> p.toString().endsWith(".stc"))
                    .filter(p -> {
                        try {
                            return Files.size(p) > 2000
                                    && !new String(Files.readAllBytes(p), java.nio.charset.StandardCharsets.ISO_8859_1)
                                            .contains("i03.jpg");
                        } catch (IOException e) {
                            return false;
                        }
                    })
                    .findFirst()
                    .orElseThrow();
        }
        byte[] bytes = Files.readAllBytes(entry);
        bytes[bytes.length - 100] ^= 0x40;
        Files.write(entry, bytes);
        d = ImageFolder.scan(root);
        try (RestartCache cache = cache(1L << 30)) {
            assertEquals(epoch(d, SPECS.get(0), 1, null), epoch(d, SPECS.get(0), 1, cache));
            RestartCache.Stats s = cache.stats();
            assertEquals(2, s.misses(), "the changed file and the damaged entry: " + s);
            assertEquals(1, s.damaged(), s.toString());
            assertTrue(cache.awaitFilled(60_000));
            assertEquals(2, cache.stats().copied(), "both made again");
            assertEquals(epoch(d, SPECS.get(3), 2, null), epoch(d, SPECS.get(3), 2, cache));
            assertEquals(2, cache.stats().misses(), "and read from the cache after");
        }
    }

    @Test
    void aFullBudgetIsSaidOnceAndTheLoaderGoesOnFromTheOriginals() throws Exception {
        Dataset d = ImageFolder.scan(data());
        try (RestartCache cache = cache(40_000)) {
            for (long e = 0; e < 3; e++) {
                assertEquals(epoch(d, SPECS.get(2), e, null), epoch(d, SPECS.get(2), e, cache));
                assertTrue(cache.awaitFilled(60_000));
            }
            assertTrue(cache.stats().full(), cache.stats().toString());
            assertNull(cache.stats().failure(), "full is not failed: " + cache.stats());
            assertTrue(cache.stats().usedBytes() <= 40_000, cache.stats().toString());
        }
        // The copies the budget had no room for were written, then removed: no temporary file is left.
        try (java.util.stream.Stream<Path> files = Files.walk(tmp.resolve("cache"))) {
            List<Path> temporary = files.filter(p -> p.getFileName().toString().endsWith(".tmp"))
                    .toList();
            assertTrue(temporary.isEmpty(), temporary.toString());
        }
        assertEquals(1, said.size(), said.toString());
        assertTrue(said.get(0).contains("is full"), said.toString());
    }

    @Test
    void aFolderThatCannotBeWrittenIsSaidOnceAndTheLoaderGoesOnFromTheOriginals() throws Exception {
        Dataset d = ImageFolder.scan(data());
        // The count's file cannot be opened (a folder is in its place): as a full disk, or a folder
        // another user owns, fails the first write.
        Files.createDirectories(tmp.resolve("cache").resolve(FolderUsage.NAME));
        try (RestartCache cache = cache(1L << 30)) {
            for (long e = 0; e < 2; e++) {
                assertEquals(epoch(d, SPECS.get(3), e, null), epoch(d, SPECS.get(3), e, cache));
                assertTrue(cache.awaitFilled(60_000));
            }
            assertEquals(0, cache.stats().copied(), cache.stats().toString());
            assertFalse(cache.stats().full(), "a folder that failed is not full: " + cache.stats());
            String failure = cache.stats().failure();
            assertNotNull(failure, cache.stats().toString());
            assertTrue(failure.contains(FolderUsage.NAME), "names what could not be written: " + failure);
            // stoke cache fills for the user, who must hear that nothing could be: it throws.
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> cache.fill(d, 1, n -> {}));
            assertEquals(
                    "cannot fill the restart cache in "
                            + tmp.resolve("cache").toAbsolutePath().normalize() + ": " + failure,
                    refused.getMessage());
        }
        assertEquals(1, said.size(), said.toString());
        assertTrue(said.get(0).startsWith("WARNING: the restart cache cannot use "), said.toString());
        assertTrue(said.get(0).contains("the rest is read from the originals"), said.toString());
    }
}
