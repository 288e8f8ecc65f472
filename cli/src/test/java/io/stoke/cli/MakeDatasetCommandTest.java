package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.source.ImageFolder;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MakeDatasetCommandTest {
    @TempDir
    Path tmp;

    private static long jpegs(Path root) throws Exception {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(p -> p.toString().endsWith(".jpg")).count();
        }
    }

    private static byte[] concat(Path root) throws Exception {
        var out = new ByteArrayOutputStream();
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.filter(Files::isRegularFile)
                    .filter(p -> p.toString().endsWith(".jpg"))
                    .sorted()
                    .toList()) {
                out.write(root.relativize(p).toString().getBytes());
                out.write(Files.readAllBytes(p));
            }
        }
        return out.toByteArray();
    }

    @Test
    void writesTheImagesInImageFolderLayoutAndPrintsTheSummary() throws Exception {
        Path out = tmp.resolve("ds");
        String[] r =
                BenchCommandTest.run("make-dataset", out.toString(), "--images", "6", "--seed", "7", "--classes", "3");
        assertEquals("0", r[0], r[1] + r[2]);
        assertEquals(6, jpegs(out));
        try (Stream<Path> s = Files.list(out)) {
            assertEquals(3, s.filter(Files::isDirectory).count());
        }
        assertTrue(r[1].contains("6 images in 3 classes"), r[1]);
        assertTrue(r[1].contains("bits/pixel") && r[1].contains("progressive"), r[1]);
        // The loader's own scan sees every file: the layout is the one bench and the harness read.
        assertEquals(6, ImageFolder.scan(out).size());
    }

    @Test
    void theSameSeedGivesTheSameFilesAndAnotherSeedOtherFiles() throws Exception {
        BenchCommandTest.run("make-dataset", tmp.resolve("a").toString(), "--images", "3", "--seed", "11");
        BenchCommandTest.run("make-dataset", tmp.resolve("b").toString(), "--images", "3", "--seed", "11");
        BenchCommandTest.run("make-dataset", tmp.resolve("c").toString(), "--images", "3", "--seed", "12");
        assertArrayEquals(concat(tmp.resolve("a")), concat(tmp.resolve("b")));
        assertFalse(Arrays.equals(concat(tmp.resolve("a")), concat(tmp.resolve("c"))));
    }

    @Test
    void refusesANonEmptyFolderAndBadCounts() throws Exception {
        Path out = tmp.resolve("full");
        Files.createDirectories(out);
        Files.writeString(out.resolve("keep.txt"), "mine");
        String[] r = BenchCommandTest.run("make-dataset", out.toString(), "--images", "2", "--seed", "1");
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0]);
        assertTrue(r[2].contains("not empty"), r[2]);
        assertEquals("mine", Files.readString(out.resolve("keep.txt")));
        String[] bad = BenchCommandTest.run(
                "make-dataset", tmp.resolve("x").toString(), "--images", "2", "--seed", "1", "--classes", "5");
        assertEquals(Integer.toString(Main.EXIT_USAGE), bad[0]);
        assertTrue(bad[2].contains("classes"), bad[2]);
    }

    @Test
    void cutsFromPhotographsWhenGivenAFolder() throws Exception {
        Path photos = Path.of("/usr/share/backgrounds/mate");
        Assumptions.assumeTrue(Files.isDirectory(photos), "no photographs installed");
        Path out = tmp.resolve("photo");
        String[] r = BenchCommandTest.run(
                "make-dataset", out.toString(), "--images", "2", "--seed", "3", "--photos", photos.toString());
        assertEquals("0", r[0], r[1] + r[2]);
        assertEquals(2, jpegs(out));
        String[] missing = BenchCommandTest.run(
                "make-dataset",
                tmp.resolve("y").toString(),
                "--images",
                "2",
                "--seed",
                "3",
                "--photos",
                tmp.resolve("nope").toString());
        assertEquals(Integer.toString(Main.EXIT_USAGE), missing[0]);
    }
}
