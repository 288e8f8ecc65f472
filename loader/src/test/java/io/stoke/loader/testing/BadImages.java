package io.stoke.loader.testing;

import io.stoke.loader.decode.BombsAccess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * A dataset in which nothing decodes: one file of each way a JPEG can be broken, each named for
 * what is wrong with it. What a new user's first run on a bad copy of their data looks like.
 */
public final class BadImages {
    private BadImages() {}

    /**
     * What a PNG cut short after its signature gives: truncated where Stoke's PNG decoder is built,
     * otherwise named as a format this build does not decode.
     */
    public static final String CUT_PNG = io.stoke.ffm.StokeImage.available() ? "TRUNCATED" : "FORMAT_NOT_DECODED";

    /** The files {@link #allBadFolder} writes (name -> the {@code SampleStatus} each must give). */
    public static final Map<String, String> EXPECTED = expected();

    private static Map<String, String> expected() {
        Map<String, String> m = new TreeMap<>();
        m.put("empty.jpg", "EMPTY_FILE");
        m.put("truncated.jpg", "TRUNCATED");
        m.put("header-only.jpg", "TRUNCATED");
        m.put("png.jpg", CUT_PNG);
        m.put("text.jpg", "NOT_IMAGE");
        m.put("bomb.jpg", "TOO_LARGE");
        m.put("zero-size.jpg", "CORRUPT");
        m.put("garbage-after-soi.jpg", "CORRUPT");
        m.put("one-byte.jpg", "NOT_IMAGE");
        return Map.copyOf(m);
    }

    /** Writes the nine broken files of {@link #EXPECTED} into {@code root/broken/}; returns {@code root}. */
    public static Path allBadFolder(Path root) {
        byte[] good = TestImages.jpeg(120, 90, 77);
        Path cls = root.resolve("broken");
        try {
            Files.createDirectories(cls);
            Files.write(cls.resolve("empty.jpg"), new byte[0]);
            Files.write(cls.resolve("truncated.jpg"), Arrays.copyOf(good, good.length / 2));
            Files.write(cls.resolve("header-only.jpg"), Arrays.copyOf(good, headerEnd(good)));
            Files.write(
                    cls.resolve("png.jpg"),
                    new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'});
            Files.write(
                    cls.resolve("text.jpg"), "this is plain text, not an image\n".getBytes(StandardCharsets.US_ASCII));
            Files.write(cls.resolve("bomb.jpg"), BombsAccess.withDimensions(good, 65500, 65500));
            Files.write(cls.resolve("zero-size.jpg"), BombsAccess.withDimensions(good, 0, 0));
            byte[] garbage = new byte[4096];
            new SplittableRandom(7).nextBytes(garbage);
            garbage[0] = (byte) 0xFF;
            garbage[1] = (byte) 0xD8;
            garbage[2] = (byte) 0xFF;
            garbage[3] = (byte) 0x01; // a marker libjpeg does not know
            Files.write(cls.resolve("garbage-after-soi.jpg"), garbage);
            Files.write(cls.resolve("one-byte.jpg"), new byte[] {(byte) 0xFF});
            return root;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The offset just past the first SOS segment's header: a file cut there has no scan data. */
    private static int headerEnd(byte[] jpeg) {
        int sos = JpegMarkers.find(jpeg, m -> m == 0xDA);
        return sos + 2 + JpegMarkers.length(jpeg, sos);
    }
}
