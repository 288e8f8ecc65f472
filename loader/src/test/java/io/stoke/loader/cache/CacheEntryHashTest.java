package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.stoke.ffm.StokeHash;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pixel library's {@code stoke_hash} against {@link CacheEntry#lanes}, the Java loop that writes
 * entries where the library is missing, bit for bit: every length to 300 and a few of a megabyte, at
 * offsets that are not multiples of 8, over random bytes and all 0xFF, under several seeds, in
 * native and heap segments. Both are held to values a Python rendering of the definition computed,
 * so that neither can drift from the entries on disk with the other, and so is {@link
 * CacheEntry#hash} (keys and headers). Entries on disk written by either side are read by the other,
 * a process of each; an earlier Stoke's entries are made again, not called damaged.
 */
class CacheEntryHashTest {
    @TempDir
    Path tmp;

    private static final long[] SEEDS = {0, 0x436F_6E74_656E_7448L, 0x5374_6F6B_6543_6163L, -1, 0x8000_0000_0000_0000L};
    private static final int MEGABYTE = 1 << 20;

    @BeforeEach
    void needsTheLibrary() {
        Assumptions.assumeTrue(StokeHash.available(), "NOT CHECKED: " + StokeHash.unavailableReason());
    }

    @Test
    void nativeEqualsJavaForEveryShortLengthAtEveryAlignment() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment random = arena.allocate(320);
            fill(random, new SplittableRandom(49));
            MemorySegment ones = arena.allocate(320).fill((byte) 0xFF);
            for (MemorySegment s : new MemorySegment[] {random, ones}) {
                for (long seed : SEEDS) {
                    for (int offset : new int[] {0, 1, 3, 7, 8, 13}) {
                        for (int length = 0; length <= 300; length++) {
                            long java = CacheEntry.lanes(seed, s, offset, length);
                            assertEquals(java, StokeHash.hash(seed, s, offset, length), () -> "seed " + seed);
                            assertEquals(java, CacheEntry.contentHash(seed, s, offset, length));
                        }
                    }
                }
            }
        }
    }

    @Test
    void nativeEqualsJavaForAMegabyte() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment random = arena.allocate(MEGABYTE + 16);
            fill(random, new SplittableRandom(7));
            MemorySegment ones = arena.allocate(MEGABYTE + 16).fill((byte) 0xFF);
            byte[] array = new byte[MEGABYTE + 16];
            new SplittableRandom(11).nextBytes(array);
            MemorySegment heap = MemorySegment.ofArray(array); // read in place: the call is critical
            for (MemorySegment s : new MemorySegment[] {random, ones, heap}) {
                for (long seed : SEEDS) {
                    for (int offset : new int[] {0, 5, 11}) {
                        for (int length : new int[] {MEGABYTE - 3, MEGABYTE, MEGABYTE + 5}) {
                            long java = CacheEntry.lanes(seed, s, offset, length);
                            assertEquals(java, StokeHash.hash(seed, s, offset, length));
                            assertEquals(java, CacheEntry.contentHash(seed, s, offset, length));
                        }
                    }
                }
            }
        }
    }

    /**
     * (seed, length, hash) of bytes {@code (31 i + 7) & 0xFF}, by a Python rendering of {@link
     * CacheEntry#hash}'s definition: keys and headers, unchanged since the first entries.
     */
    private static final long[][] PINNED = {
        {0L, 0, 0L},
        {0L, 1, -621772950581698083L},
        {0L, 7, 1292501632035425590L},
        {0L, 8, 5183216958655690707L},
        {0L, 9, 3791729087348230370L},
        {0L, 63, 4824627037020289658L},
        {0L, 100003, -9210466821059867389L},
        {0L, 1048576, 102951650266035238L},
        {0x436F_6E74_656E_7448L, 0, -8509215993977527211L},
        {0x436F_6E74_656E_7448L, 9, -7852177004511025699L},
        {0x436F_6E74_656E_7448L, 100003, 7235789904852554651L},
        {0x436F_6E74_656E_7448L, 1048576, 5021448411037842462L},
        {-1L, 0, -5417735806833148549L},
        {-1L, 7, -6975572104621607373L},
        {-1L, 63, -8017723608451891222L},
        {-1L, 1048576, -1453688619495949924L},
    };

    /**
     * The same for the content hash, {@link CacheEntry#lanes} ({@code native/pixels/stoke_hash.h}):
     * lengths on both sides of a lane step (31, 32, 33) too.
     */
    private static final long[][] PINNED_CONTENT = {
        {0L, 0, -5719385731229326070L},
        {0L, 1, -6471281812131768941L},
        {0L, 7, -7261475138239985391L},
        {0L, 8, -4112401563725700118L},
        {0L, 9, 1049248173366859863L},
        {0L, 31, -9216445957883354482L},
        {0L, 32, -1767680625006179099L},
        {0L, 33, 5702248818380827189L},
        {0L, 63, -8281511427909196472L},
        {0L, 100003, -4917456099088998457L},
        {0L, 1048576, 3249857480358645032L},
        {0x436F_6E74_656E_7448L, 0, 2439910603691068166L},
        {0x436F_6E74_656E_7448L, 9, 4436258428933669266L},
        {0x436F_6E74_656E_7448L, 100003, 3202100214003150457L},
        {0x436F_6E74_656E_7448L, 1048576, -7652951565367965830L},
        {-1L, 0, -7402012019346372995L},
        {-1L, 7, 2781132724420703980L},
        {-1L, 63, 2397107637129547243L},
        {-1L, 1048576, -7312605735339157505L},
    };

    @Test
    void bothAgreeWithTheDefinitionsValues() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(MEGABYTE + 3);
            for (int i = 0; i < MEGABYTE; i++) {
                s.set(JAVA_BYTE, 3 + i, (byte) (31 * i + 7));
            }
            for (long[] p : PINNED) {
                assertEquals(p[2], CacheEntry.hash(p[0], s, 3, p[1]), () -> "Java's key hash, length " + p[1]);
            }
            for (long[] p : PINNED_CONTENT) {
                assertEquals(p[2], CacheEntry.lanes(p[0], s, 3, p[1]), () -> "Java, length " + p[1]);
                assertEquals(p[2], StokeHash.hash(p[0], s, 3, p[1]), () -> "C, length " + p[1]);
            }
        }
    }

    @Test
    void anExtentOutsideTheSegmentIsRefusedBeforeTheCall() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(100);
            assertThrows(IndexOutOfBoundsException.class, () -> CacheEntry.contentHash(0, s, 1, 100));
            assertThrows(IndexOutOfBoundsException.class, () -> CacheEntry.contentHash(0, s, -1, 10));
            assertThrows(IndexOutOfBoundsException.class, () -> CacheEntry.contentHash(0, s, 0, -1));
            assertThrows(IndexOutOfBoundsException.class, () -> CacheEntry.contentHash(0, s, 101, 0));
            assertEquals(CacheEntry.lanes(0, s, 100, 0), CacheEntry.contentHash(0, s, 100, 0));
        }
    }

    /**
     * Entries on disk, both ways: a process without the pixel library (hashing in Java) fills a
     * folder that this one (hashing in C) then reads, every sample a hit; and this one fills a folder
     * that such a process reads, every sample a hit. A damaged entry would be a miss.
     */
    @Test
    void anEntryWrittenByEitherSideIsReadByTheOther() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path data = twelveJpegs();

        String filled = runChild(data, tmp.resolve("by-java"));
        assertEquals(1, warnings(filled), filled);
        assertTrue(filled.contains("hits=0 misses=12 copied=12 damaged=0"), filled);
        try (RestartCache cache = RestartCache.open(tmp.resolve("by-java"), 1L << 30, w -> fail(w))) {
            RestartCache.Stats s = epoch(data, cache);
            assertEquals(List.of(12L, 0L, 0L), List.of(s.hits(), s.misses(), s.damaged()), s.toString());
        }

        try (RestartCache cache = RestartCache.open(tmp.resolve("by-c"), 1L << 30, w -> fail(w))) {
            RestartCache.Stats s = epoch(data, cache);
            assertEquals(List.of(12L, 12L), List.of(s.misses(), s.copied()), s.toString());
        }
        String read = runChild(data, tmp.resolve("by-c"));
        assertTrue(read.contains("hits=12 misses=0 copied=0 damaged=0"), read);
    }

    /**
     * An earlier Stoke's entries (magic "STKRSTC1", the content hashed in one lane) are neither
     * served nor called damaged: each is a miss and is made again in this format, by a loader's
     * epoch and by {@code stoke cache}'s fill, and then hits.
     */
    @Test
    void anEarlierStokesEntriesAreMadeAgainNotCalledDamaged() throws Exception {
        Assumptions.assumeTrue(RestartCopy.available(), "NOT CHECKED: " + RestartCopy.unavailableReason());
        Path data = twelveJpegs();
        Path folder = tmp.resolve("cache");
        try (RestartCache cache = RestartCache.open(folder, 1L << 30, w -> fail(w))) {
            assertEquals(12L, epoch(data, cache).copied());
        }
        assertEquals(12, former(folder));
        try (RestartCache cache = RestartCache.open(folder, 1L << 30, w -> fail(w))) {
            RestartCache.Stats s = epoch(data, cache);
            assertEquals(
                    List.of(0L, 12L, 0L, 12L), List.of(s.hits(), s.misses(), s.damaged(), s.copied()), s.toString());
            s = epoch(data, cache); // the counts are the process's: this epoch's 12 hits added
            assertEquals(List.of(12L, 12L, 0L), List.of(s.hits(), s.misses(), s.damaged()), s.toString());
        }
        assertEquals(12, former(folder));
        try (RestartCache cache = RestartCache.open(folder, 1L << 30, w -> fail(w))) {
            cache.fill(ImageFolder.scan(data), 2, d -> {});
            assertEquals(12L, cache.stats().copied());
            RestartCache.Stats s = epoch(data, cache);
            assertEquals(List.of(12L, 0L, 0L), List.of(s.hits(), s.misses(), s.damaged()), s.toString());
        }
    }

    /** Rewrites every entry's magic as an earlier Stoke wrote it; how many. */
    private static int former(Path folder) throws Exception {
        byte[] magic = "STKRSTC1".getBytes(StandardCharsets.US_ASCII);
        int n = 0;
        try (var entries = Files.walk(folder)) {
            for (Path e : entries.filter(f -> f.toString().endsWith(".stc")).toList()) {
                try (var ch = java.nio.channels.FileChannel.open(e, java.nio.file.StandardOpenOption.WRITE)) {
                    ch.write(java.nio.ByteBuffer.wrap(magic), 0);
                }
                n++;
            }
        }
        return n;
    }

    /** An ImageFolder of 12 JPEGs of different sizes in two classes. */
    private Path twelveJpegs() throws Exception {
        Path data = tmp.resolve("data");
        for (int i = 0; i < 12; i++) {
            int w = 64 + 23 * i;
            int h = 48 + 17 * i;
            byte[] jpeg = TestImages.jpeg(TestImages.rgb(w, h, i), w, h, 3, 88, TurboJpeg.TJSAMP_420, 0);
            Files.write(Files.createDirectories(data.resolve("c" + i % 2)).resolve("i" + i + ".jpg"), jpeg);
        }
        return data;
    }

    private static RestartCache.Stats epoch(Path data, RestartCache cache) throws Exception {
        try (Loader l = Loader.builder(ImageFolder.scan(data))
                .transform(TransformSpec.defaults().withResize(48, 40))
                .batchSize(4)
                .workers(2)
                .restartCache(cache)
                .build()) {
            for (Batch b : l) {
                b.close();
            }
        }
        assertTrue(cache.awaitFilled(60_000));
        return cache.stats();
    }

    private static long warnings(String log) {
        return log.lines()
                .filter(l -> l.contains("the restart cache hashes its entries in Java instead"))
                .count();
    }

    /** Runs {@link JavaHashCacheChild} without the pixel library; its output, once it exits 0. */
    private static String runChild(Path data, Path cache) throws Exception {
        Process p = new ProcessBuilder(
                        ProcessHandle.current().info().command().orElse("java"),
                        "--enable-native-access=ALL-UNNAMED",
                        "--add-exports",
                        "java.base/jdk.internal.misc=ALL-UNNAMED",
                        "-Dstoke.pixels.path=none",
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        System.getProperty("java.class.path"),
                        JavaHashCacheChild.class.getName(),
                        data.toString(),
                        cache.toString())
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    private static void fill(MemorySegment s, SplittableRandom r) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) r.nextInt(256));
        }
    }
}
