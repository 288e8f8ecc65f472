package io.stoke.loader.testing;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.TurboJpeg;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

/** Makes small textured test images and JPEGs from them, deterministically. */
public final class TestImages {
    private TestImages() {}

    /** A textured RGB image (gradients, a disc, noise), {@code w*h*3} bytes. */
    public static byte[] rgb(int w, int h, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        byte[] px = new byte[w * h * 3];
        double cx = w * (0.3 + 0.4 * r.nextDouble());
        double cy = h * (0.3 + 0.4 * r.nextDouble());
        double rad = Math.min(w, h) * 0.3;
        int[] base = {r.nextInt(256), r.nextInt(256), r.nextInt(256)};
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                boolean inside = (x - cx) * (x - cx) + (y - cy) * (y - cy) < rad * rad;
                for (int c = 0; c < 3; c++) {
                    double v = base[c] * 0.5
                            + 100.0 * x / w * (c == 0 ? 1 : 0.3)
                            + 80.0 * y / h * (c == 2 ? 1 : 0.5)
                            + (inside ? 60 * (c - 1) : 0)
                            + 20 * Math.sin(x * 0.3 + c) * Math.cos(y * 0.2)
                            + r.nextInt(24);
                    px[(y * w + x) * 3 + c] = (byte) Math.max(0, Math.min(255, (int) v));
                }
            }
        }
        return px;
    }

    /** Compresses {@code pixels} ({@code channels} = 1, 3 or 4 for CMYK) to a JPEG. */
    public static byte[] jpeg(byte[] pixels, int w, int h, int channels, int quality, int subsamp, int flags) {
        int format = switch (channels) {
            case 1 -> TurboJpeg.TJPF_GRAY;
            case 3 -> TurboJpeg.TJPF_RGB;
            case 4 -> TurboJpeg.TJPF_CMYK;
            default -> throw new IllegalArgumentException("channels " + channels);
        };
        try (Arena arena = Arena.ofConfined();
                JpegCompressor c = new JpegCompressor()) {
            MemorySegment src = arena.allocate(pixels.length);
            MemorySegment.copy(pixels, 0, src, JAVA_BYTE, 0, pixels.length);
            MemorySegment dst = arena.allocate(JpegCompressor.maxSize(w, h, subsamp));
            long n = c.compress(src, w, w * channels, h, format, subsamp, quality, flags, dst);
            byte[] jpeg = dst.asSlice(0, n).toArray(JAVA_BYTE);
            // A test that asks for a progressive file must get one, or it tests a baseline file twice.
            if (isProgressive(jpeg) != ((flags & TurboJpeg.TJFLAG_PROGRESSIVE) != 0)) {
                throw new IllegalStateException(
                        "flags " + flags + " gave a " + (isProgressive(jpeg) ? "progressive" : "baseline") + " JPEG");
            }
            return jpeg;
        }
    }

    /** Whether the JPEG's frame header is a progressive one (SOF2). */
    public static boolean isProgressive(byte[] jpeg) {
        int at = JpegMarkers.find(jpeg, m -> m == 0xC0 || m == 0xC1 || m == 0xC2 || m == 0xDA);
        return (jpeg[at + 1] & 0xFF) == 0xC2;
    }

    /** A 4:2:0 baseline JPEG of a textured image. */
    public static byte[] jpeg(int w, int h, long seed) {
        return jpeg(rgb(w, h, seed), w, h, 3, 90, TurboJpeg.TJSAMP_420, 0);
    }

    /** Writes an ImageFolder dataset of {@code n} JPEGs spread over {@code classes} classes. */
    public static Path imageFolder(Path root, int n, int classes, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        try {
            for (int i = 0; i < n; i++) {
                Path dir = root.resolve(String.format("class%02d", i % classes));
                Files.createDirectories(dir);
                int w = 40 + r.nextInt(120);
                int h = 40 + r.nextInt(120);
                Files.write(dir.resolve(String.format("img%04d.jpg", i)), jpeg(w, h, seed * 1000 + i));
            }
            return root;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
