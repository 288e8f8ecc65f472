package io.stoke.embed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EmbeddingOutputTest {
    @TempDir
    Path dir;

    private static MemorySegment row(Arena arena, float... v) {
        MemorySegment s = arena.allocate(4L * v.length);
        MemorySegment.copy(v, 0, s, ValueLayout.JAVA_FLOAT, 0, v.length);
        return s;
    }

    private List<String> files() throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void rowsInAnyOrderMakeANumpyFileAndSkippedRowsAreZeros() throws Exception {
        try (Arena arena = Arena.ofConfined();
                EmbeddingOutput out = EmbeddingOutput.create(dir, 3, List.of("a.jpg", "b.jpg", "c.jpg"), false)) {
            out.writeRow(2, row(arena, 7, 8, 9));
            out.writeRow(0, row(arena, 1, 2, 3));
            out.skip(1, "b.jpg", "TRUNCATED: Premature end of JPEG file");
            assertFalse(Files.exists(dir.resolve("embeddings.npy")), "nothing looks complete before the commit");
            out.commit();
        }
        Npy npy = Npy.read(dir.resolve("embeddings.npy"));
        assertEquals(3, npy.rows);
        assertEquals(3, npy.columns);
        assertEquals(List.of(1f, 2f, 3f, 0f, 0f, 0f, 7f, 8f, 9f), toList(npy.values));
        assertEquals(List.of("a.jpg", "b.jpg", "c.jpg"), Files.readAllLines(dir.resolve("paths.txt")));
        assertEquals(
                List.of("b.jpg\tTRUNCATED: Premature end of JPEG file"),
                Files.readAllLines(dir.resolve("skipped.txt")));
        assertEquals(List.of("embeddings.npy", "paths.txt", "skipped.txt"), files());
    }

    @Test
    void anUnfinishedRunLeavesNothingBehindAndAFinishedOneIsKeptUnlessOverwritten() throws Exception {
        try (Arena arena = Arena.ofConfined();
                EmbeddingOutput out = EmbeddingOutput.create(dir, 2, List.of("a.jpg"), false)) {
            out.writeRow(0, row(arena, 1, 2));
            assertTrue(files().contains(".embeddings.npy.partial"));
        } // no commit: a failed run
        assertEquals(List.of(), files());
        try (Arena arena = Arena.ofConfined();
                EmbeddingOutput out = EmbeddingOutput.create(dir, 2, List.of("a.jpg"), false)) {
            out.writeRow(0, row(arena, 1, 2));
            out.commit();
        }
        IllegalStateException kept = assertThrows(
                IllegalStateException.class, () -> EmbeddingOutput.create(dir, 2, List.of("a.jpg"), false));
        assertTrue(kept.getMessage().contains("--overwrite"), kept.getMessage());
        try (EmbeddingOutput _ = EmbeddingOutput.create(dir, 2, List.of("b.jpg"), true)) {
            assertTrue(Files.exists(dir.resolve("embeddings.npy")), "the finished run stays until the new one commits");
        } // the new run fails
        assertEquals(List.of("a.jpg"), Files.readAllLines(dir.resolve("paths.txt")));
        assertEquals(List.of(1f, 2f), toList(Npy.read(dir.resolve("embeddings.npy")).values));
    }

    /**
     * Links planted at every name the output writes (its partial files and its final ones) in a
     * folder others can write: each is replaced by the output, never written through, and the
     * targets keep their bytes.
     */
    @Test
    void plantedLinksAreReplacedAndTheirTargetsKeepTheirBytes(@TempDir Path elsewhere) throws Exception {
        List<String> names = List.of(
                ".embeddings.npy.partial",
                ".paths.txt.partial",
                ".skipped.txt.partial",
                "embeddings.npy",
                "paths.txt",
                "skipped.txt");
        for (String name : names) {
            Files.writeString(elsewhere.resolve(name), "precious " + name);
            Files.createSymbolicLink(dir.resolve(name), elsewhere.resolve(name));
        }
        try (Arena arena = Arena.ofConfined();
                EmbeddingOutput out = EmbeddingOutput.create(dir, 2, List.of("a.jpg", "b.jpg"), true)) {
            out.writeRow(0, row(arena, 1, 2));
            out.skip(1, "b.jpg", "TRUNCATED");
            out.commit();
        }
        for (String name : names) {
            assertEquals("precious " + name, Files.readString(elsewhere.resolve(name)), name + "'s target");
        }
        assertEquals(List.of(1f, 2f, 0f, 0f), toList(Npy.read(dir.resolve("embeddings.npy")).values));
        assertEquals(List.of("a.jpg", "b.jpg"), Files.readAllLines(dir.resolve("paths.txt")));
        for (String name : List.of("embeddings.npy", "paths.txt", "skipped.txt")) {
            assertTrue(Files.isRegularFile(dir.resolve(name), java.nio.file.LinkOption.NOFOLLOW_LINKS), name);
        }
        assertEquals(List.of("embeddings.npy", "paths.txt", "skipped.txt"), files());
    }

    /** A Parquet table's partial file: a link there is removed, and the table made with O_EXCL. */
    @Test
    void aLinkAtATablesPartialNameIsNotWrittenThrough(@TempDir Path elsewhere) throws Exception {
        Path victim = elsewhere.resolve("victim");
        Files.writeString(victim, "precious");
        Path partial = Files.createSymbolicLink(dir.resolve(".t.parquet.partial"), victim);
        assertThrows(java.io.UncheckedIOException.class, () -> EmbeddingTable.create(partial, 2));
        assertEquals("precious", Files.readString(victim));
    }

    @Test
    void theHeaderIsNumpysFormatPaddedTo64Bytes() {
        byte[] h = EmbeddingOutput.npyHeader(1000, 2048);
        assertEquals(0, h.length % 64);
        String text = new String(h, 10, h.length - 10, StandardCharsets.US_ASCII);
        assertTrue(text.startsWith("{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 2048), }"), text);
        assertTrue(text.endsWith("\n"));
        assertEquals(h.length - 10, (h[8] & 0xFF) | (h[9] & 0xFF) << 8);
    }

    private static List<Float> toList(float[] v) {
        List<Float> l = new ArrayList<>();
        for (float f : v) {
            l.add(f);
        }
        return l;
    }
}
