package io.stoke.testdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Determinism and {@link SyntheticImageNet#ensure}'s caching. */
class SyntheticImageNetCacheTest {
    private static final SyntheticImageNet.Options SMALL = new SyntheticImageNet.Options(16, 3, 7);

    @TempDir
    Path tmp;

    @Test
    void sameSeedGivesIdenticalBytesOnAnyThreadCount() throws IOException {
        SyntheticImageNet.generate(tmp.resolve("a"), SMALL);
        SyntheticImageNet.generateInto(tmp.resolve("b"), SMALL, 1);
        SyntheticImageNetTest.assertSameFiles(tmp.resolve("a"), tmp.resolve("b"));
        assertEquals(16, SyntheticImageNetTest.files(tmp.resolve("a")).size());
    }

    @Test
    void differentSeedGivesDifferentImages() throws IOException {
        SyntheticImageNet.generate(tmp.resolve("a"), SMALL);
        SyntheticImageNet.generate(tmp.resolve("b"), new SyntheticImageNet.Options(16, 3, 8));
        List<Path> a = SyntheticImageNetTest.files(tmp.resolve("a"));
        List<Path> b = SyntheticImageNetTest.files(tmp.resolve("b"));
        assertEquals(a.size(), b.size());
        for (int i = 0; i < a.size(); i++) {
            assertNotEquals(-1L, Files.mismatch(a.get(i), b.get(i)), a.get(i) + " should differ");
        }
    }

    @Test
    void ensureGeneratesOnceThenReuses() throws IOException {
        Path cache = tmp.resolve("cache");
        SyntheticImageNet.Summary first = SyntheticImageNet.ensure(cache, SMALL);
        assertFalse(first.cached());
        Map<Path, FileTime> times = mtimes(cache);
        assertEquals(16, times.size());

        SyntheticImageNet.Summary second = SyntheticImageNet.ensure(cache, SMALL);
        assertTrue(second.cached());
        assertEquals(times, mtimes(cache), "a cache hit must not rewrite files");
        assertEquals(first.totalBytes(), second.totalBytes());
        assertEquals(first.meanBitsPerPixel(), second.meanBitsPerPixel(), 1e-12);
        assertEquals(first.medianWidth(), second.medianWidth());
        assertEquals(first.progressiveFraction(), second.progressiveFraction());
        assertTrue(second.format().contains("cached"), second.format());
    }

    @Test
    void ensureRegeneratesWhenOptionsChange() throws IOException {
        Path cache = tmp.resolve("cache");
        SyntheticImageNet.ensure(cache, SMALL);
        byte[] before = Files.readAllBytes(SyntheticImageNetTest.files(cache).get(0));
        SyntheticImageNet.Summary other = SyntheticImageNet.ensure(cache, new SyntheticImageNet.Options(20, 2, 99));
        assertFalse(other.cached());
        assertEquals(20, SyntheticImageNetTest.files(cache).size(), "old files are wiped");
        assertEquals(2, Files.list(cache).filter(Files::isDirectory).count());
        assertFalse(Arrays.equals(
                before, Files.readAllBytes(SyntheticImageNetTest.files(cache).get(0))));
        assertTrue(SyntheticImageNet.ensure(cache, new SyntheticImageNet.Options(20, 2, 99))
                .cached());
    }

    @Test
    void ensureRepairsADamagedCache() throws IOException {
        Path cache = tmp.resolve("cache");
        SyntheticImageNet.ensure(cache, SMALL);
        Path victim = SyntheticImageNetTest.files(cache).get(3);
        Files.write(victim, new byte[] {1, 2, 3});
        assertFalse(SyntheticImageNet.ensure(cache, SMALL).cached());
        SyntheticImageNet.generate(tmp.resolve("fresh"), SMALL);
        SyntheticImageNetTest.assertSameFiles(tmp.resolve("fresh"), cache);

        Files.delete(SyntheticImageNetTest.files(cache).get(0));
        assertFalse(SyntheticImageNet.ensure(cache, SMALL).cached(), "a missing file means regenerate");
    }

    @Test
    void ensureRebuildsAnInterruptedGeneration() throws IOException {
        Path cache = tmp.resolve("cache");
        DatasetMarker.expected(SMALL, "").writeIncomplete(cache);
        Files.createDirectories(cache.resolve("n00000000"));
        Files.write(cache.resolve("n00000000/partial.jpg"), new byte[10]);
        SyntheticImageNet.Summary s = SyntheticImageNet.ensure(cache, SMALL);
        assertFalse(s.cached());
        assertFalse(Files.exists(cache.resolve("n00000000/partial.jpg")));
        assertEquals(16, SyntheticImageNetTest.files(cache).size());
    }

    @Test
    void ensureNeverWipesAForeignFolder() throws IOException {
        Path precious = tmp.resolve("home");
        Files.createDirectories(precious);
        Files.writeString(precious.resolve("thesis.tex"), "years of work");
        IllegalStateException e =
                assertThrows(IllegalStateException.class, () -> SyntheticImageNet.ensure(precious, SMALL));
        assertTrue(e.getMessage().contains("refusing"), e.getMessage());
        assertEquals("years of work", Files.readString(precious.resolve("thesis.tex")));
    }

    private static Map<Path, FileTime> mtimes(Path root) throws IOException {
        Map<Path, FileTime> m = new HashMap<>();
        for (Path p : SyntheticImageNetTest.files(root)) {
            m.put(p, Files.getLastModifiedTime(p));
        }
        return m;
    }
}
