package io.stoke.testdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.JpegDecompressor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real-photo mode, on the Debian package mate-backgrounds' photographs when installed. */
class SyntheticImageNetPhotoTest {
    private static final Path MATE = Path.of("/usr/share/backgrounds/mate");

    @TempDir
    Path tmp;

    @Test
    void cutsImageNetSizedImagesFromPhotographs() throws IOException {
        // The nature folder holds the photographs; the rest are drawings, and it keeps the test quick.
        Path photos = MATE.resolve("nature");
        assumeTrue(
                Files.isDirectory(photos),
                "skipped: no photographs at " + photos + " (apt-get install mate-backgrounds to run this test)");
        SyntheticImageNet.Options o = new SyntheticImageNet.Options(40, 4, 3, photos);
        SyntheticImageNet.Generated g = SyntheticImageNet.generateInto(tmp.resolve("a"), o, 2);
        SyntheticImageNet.Summary s = g.summary();
        System.out.println(s.format());
        assertEquals(40, s.images());
        assertEquals(500, s.medianWidth());
        assertTrue(s.medianHeight() >= 333 && s.medianHeight() <= 400, s.format());
        assertTrue(s.portraitFraction() > 0.1 && s.portraitFraction() < 0.4, s.format());
        assertTrue(s.progressiveFraction() > 0, s.format());
        // Wallpapers are smoother than ImageNet (bokeh, skies), so only a loose bound here.
        assertTrue(s.meanBitsPerPixel() > 1.0 && s.meanBitsPerPixel() < 8, s.format());
        try (JpegDecompressor d = new JpegDecompressor();
                Arena arena = Arena.ofConfined()) {
            for (ImageRecord r : g.records()) {
                byte[] bytes = Files.readAllBytes(tmp.resolve("a").resolve(r.path()));
                MemorySegment jpeg = arena.allocateFrom(ValueLayout.JAVA_BYTE, bytes);
                assertEquals(0, d.readHeader(jpeg, bytes.length), r.path());
                assertEquals(r.width(), d.width());
                assertEquals(r.height(), d.height());
            }
        }
        SyntheticImageNet.generateInto(tmp.resolve("b"), new SyntheticImageNet.Options(8, 4, 3, photos), 1);
        for (int i = 0; i < 8; i++) {
            Path rel = Path.of(g.records().get(i).path());
            assertEquals(
                    -1L,
                    Files.mismatch(
                            tmp.resolve("a").resolve(rel), tmp.resolve("b").resolve(rel)),
                    "photo mode is deterministic too: " + rel);
        }
    }

    @Test
    void folderWithoutPhotographsIsAClearError() throws IOException {
        Files.writeString(tmp.resolve("notes.txt"), "not an image");
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> SyntheticImageNet.generate(tmp.resolve("out"), new SyntheticImageNet.Options(2, 1, 1, tmp)));
        assertTrue(e.getMessage().contains("no readable photographs"), e.getMessage());
        assertFalse(Files.exists(tmp.resolve("out").resolve("n00000000")), "nothing written on failure");
    }

    @Test
    void missingFolderIsAClearError() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> SyntheticImageNet.generate(
                        tmp.resolve("out"), new SyntheticImageNet.Options(2, 1, 1, tmp.resolve("nope"))));
        assertTrue(e.getMessage().contains("nope"), e.getMessage());
    }
}
