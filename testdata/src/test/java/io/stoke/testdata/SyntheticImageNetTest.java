package io.stoke.testdata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.JpegDecompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SyntheticImageNetTest {
    private static final int IMAGES = 200;
    private static final int CLASSES = 10;

    @TempDir
    static Path shared;

    private static SyntheticImageNet.Summary summary;
    private static List<ImageRecord> records;

    @BeforeAll
    static void generateOnce() {
        SyntheticImageNet.Generated g = SyntheticImageNet.generateInto(
                shared,
                new SyntheticImageNet.Options(IMAGES, CLASSES, 42),
                Runtime.getRuntime().availableProcessors());
        summary = g.summary();
        records = g.records();
        System.out.println(summary.format());
    }

    @Test
    void writerThreadsAreAsManyAsTheHeapHolds() {
        // Stoke's JVMs run with -Xmx384m: 16 writers there ran out of heap on a 16-core machine.
        assertEquals(2, SyntheticImageNet.writerThreads(16, 384L << 20));
        assertEquals(1, SyntheticImageNet.writerThreads(2, 160L << 20));
        assertEquals(16, SyntheticImageNet.writerThreads(16, (16L << 27) + (32L << 20)));
        assertEquals(15, SyntheticImageNet.writerThreads(16, 2L << 30));
        assertEquals(1, SyntheticImageNet.writerThreads(16, 32L << 20));
    }

    @Test
    void statisticsMatchImageNet() {
        assertEquals(IMAGES, summary.images());
        assertEquals(500, summary.medianWidth());
        assertTrue(
                summary.medianHeight() >= 333 && summary.medianHeight() <= 400,
                "median height " + summary.medianHeight());
        assertInRange("portrait share", summary.portraitFraction(), 0.15, 0.35);
        assertInRange("long side > 500 share", summary.largeFraction(), 0.05, 0.15);
        assertInRange("mean bits per pixel", summary.meanBitsPerPixel(), 3.5, 4.5);
        assertInRange("mean file KB", summary.meanBytes() / 1000, 70, 160);
        assertInRange("progressive share", summary.progressiveFraction(), 0.05, 0.15);
        assertInRange("grayscale share", summary.grayscaleFraction(), 0.005, 0.05);
        assertTrue(summary.minQuality() >= 75 && summary.maxQuality() <= 95, summary.format());
        assertTrue(summary.maxQuality() - summary.minQuality() >= 15, "qualities should spread over 75-95");
        int maxLong = records.stream()
                .mapToInt(r -> Math.max(r.width(), r.height()))
                .max()
                .orElseThrow();
        assertTrue(maxLong > 900 && maxLong <= ImagePlan.MAX_LONG_SIDE, "largest long side " + maxLong);
        long at500 = records.stream()
                .filter(r -> Math.max(r.width(), r.height()) == 500)
                .count();
        assertTrue(at500 > IMAGES * 0.7, "most images are 500 px on the long side: " + at500);
    }

    /** Reads every file back with libjpeg-turbo and checks it against what the generator claims. */
    @Test
    void everyFileDecodesAndMatchesItsRecord() throws IOException {
        int progressive = 0;
        int gray = 0;
        try (JpegDecompressor d = new JpegDecompressor();
                Arena arena = Arena.ofConfined()) {
            MemorySegment pixels = arena.allocate(3L * ImagePlan.MAX_LONG_SIDE * ImagePlan.MAX_LONG_SIDE);
            for (ImageRecord r : records) {
                byte[] bytes = Files.readAllBytes(shared.resolve(r.path()));
                assertEquals(r.bytes(), bytes.length, r.path());
                MemorySegment jpeg = arena.allocateFrom(ValueLayout.JAVA_BYTE, bytes);
                assertEquals(0, d.readHeader(jpeg, bytes.length), r.path() + ": " + d.errorMessage());
                assertEquals(r.width(), d.width(), r.path());
                assertEquals(r.height(), d.height(), r.path());
                assertEquals(r.grayscale() ? TurboJpeg.TJSAMP_GRAY : TurboJpeg.TJSAMP_420, d.subsampling(), r.path());
                assertEquals(
                        0,
                        d.decompress(
                                jpeg,
                                bytes.length,
                                pixels,
                                r.width(),
                                3 * r.width(),
                                r.height(),
                                TurboJpeg.TJPF_RGB,
                                0),
                        r.path() + ": " + d.errorMessage());
                boolean sof2 = hasMarker(bytes, 0xC2);
                assertEquals(r.progressive(), sof2, r.path() + " progressive");
                progressive += sof2 ? 1 : 0;
                gray += d.subsampling() == TurboJpeg.TJSAMP_GRAY ? 1 : 0;
                assertTrue(r.quality() >= 75 && r.quality() <= 95);
            }
        }
        assertTrue(progressive >= 10 && progressive <= 30, "progressive files: " + progressive);
        assertTrue(gray >= 1 && gray <= 10, "grayscale files: " + gray);
    }

    /** Not flat: neighbouring pixels differ, as in a photograph (a flat image would decode too fast). */
    @Test
    void contentHasPhotoLikeDetail() throws IOException {
        ImageRecord r = records.stream().filter(x -> !x.grayscale()).findFirst().orElseThrow();
        try (JpegDecompressor d = new JpegDecompressor();
                Arena arena = Arena.ofConfined()) {
            byte[] bytes = Files.readAllBytes(shared.resolve(r.path()));
            MemorySegment jpeg = arena.allocateFrom(ValueLayout.JAVA_BYTE, bytes);
            MemorySegment px = arena.allocate(3L * r.width() * r.height());
            d.readHeader(jpeg, bytes.length);
            assertEquals(
                    0,
                    d.decompress(jpeg, bytes.length, px, r.width(), 3 * r.width(), r.height(), TurboJpeg.TJPF_RGB, 0));
            byte[] p = px.toArray(ValueLayout.JAVA_BYTE);
            double sumDiff = 0;
            int[] hist = new int[256];
            for (int i = 3; i < p.length; i += 3) {
                sumDiff += Math.abs((p[i] & 0xFF) - (p[i - 3] & 0xFF));
                hist[p[i] & 0xFF]++;
            }
            double meanDiff = sumDiff / (p.length / 3.0);
            assertTrue(meanDiff > 3, "mean horizontal gradient " + meanDiff);
            long used = Arrays.stream(hist).filter(c -> c > 0).count();
            assertTrue(used > 100, "distinct red levels " + used);
        }
    }

    @Test
    void imageFolderLayout() throws IOException {
        Dataset dataset = ImageFolder.scan(shared);
        assertEquals(IMAGES, dataset.size());
        for (int c = 0; c < CLASSES; c++) {
            Path dir = shared.resolve(SyntheticImageNet.className(c));
            try (Stream<Path> s = Files.list(dir)) {
                List<String> names = s.map(p -> p.getFileName().toString()).toList();
                assertEquals(IMAGES / CLASSES, names.size(), dir.toString());
                for (String n : names) {
                    assertTrue(n.startsWith(SyntheticImageNet.className(c) + "_") && n.endsWith(".jpg"), n);
                }
            }
        }
        for (ImageRecord r : records) {
            int number = Integer.parseInt(
                    r.path().substring(r.path().lastIndexOf('_') + 1, r.path().length() - 4));
            assertTrue(r.path().startsWith(SyntheticImageNet.className(number % CLASSES) + "/"), r.path());
        }
        assertEquals("n00000000", SyntheticImageNet.className(0));
        assertTrue(
                SyntheticImageNet.className(9).compareTo(SyntheticImageNet.className(10)) < 0,
                "names sort in label order");
    }

    @Test
    void summaryFormatsReadably() {
        String text = summary.format();
        assertEquals(3, text.lines().count(), text);
        assertTrue(text.contains("200 images in 10 classes"), text);
        assertTrue(text.contains("bits/pixel") && text.contains("progressive") && text.contains("quality 7"), text);
    }

    @Test
    void optionsAreValidated() {
        assertThrows(IllegalArgumentException.class, () -> new SyntheticImageNet.Options(0, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new SyntheticImageNet.Options(5, 6, 1));
        assertThrows(
                IllegalArgumentException.class,
                () -> SyntheticImageNet.generate(shared, new SyntheticImageNet.Options(1, 1, 1)),
                "refuses a non-empty output folder");
    }

    /** True when the frame header is SOF{@code marker - 0xC0}; walks the header segments properly. */
    static boolean hasMarker(byte[] jpeg, int marker) {
        int i = 2;
        while (i + 3 < jpeg.length && (jpeg[i] & 0xFF) == 0xFF) {
            int m = jpeg[i + 1] & 0xFF;
            if (m >= 0xC0 && m <= 0xC3) {
                return m == marker;
            }
            i += 2 + (((jpeg[i + 2] & 0xFF) << 8) | (jpeg[i + 3] & 0xFF));
        }
        return false;
    }

    private static void assertInRange(String what, double v, double lo, double hi) {
        assertTrue(v >= lo && v <= hi, what + " = " + v + ", expected " + lo + ".." + hi);
    }

    static void assertSameFiles(Path a, Path b) throws IOException {
        List<Path> fa = files(a);
        List<Path> fb = files(b);
        assertEquals(
                fa.stream().map(a::relativize).toList(),
                fb.stream().map(b::relativize).toList());
        for (int i = 0; i < fa.size(); i++) {
            assertArrayEquals(
                    Files.readAllBytes(fa.get(i)),
                    Files.readAllBytes(fb.get(i)),
                    fa.get(i).toString());
        }
    }

    static List<Path> files(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(Files::isRegularFile)
                    .filter(p -> p.getFileName().toString().endsWith(".jpg"))
                    .sorted()
                    .toList();
        }
    }

    @Test
    void labelsFollowClassFolders() {
        Dataset dataset = ImageFolder.scan(shared);
        for (int i = 0; i < dataset.size(); i++) {
            assertEquals(
                    SyntheticImageNet.className(dataset.label(i)),
                    dataset.path(i).substring(0, 9),
                    dataset.path(i));
        }
        assertFalse(dataset.classNames().isEmpty());
    }
}
