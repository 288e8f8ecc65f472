package io.stoke.testdata;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import javax.imageio.ImageIO;

/**
 * Real photographs as the raw material: random crops with the planned aspect ratio, resampled
 * to the planned size. Photographs are kept in memory as RGB bytes, each scaled down once on
 * load to at most {@link #MAX_SIDE} on the long side, which is both a memory bound and still
 * above the largest image we make. Read-only after loading, so all workers share one instance.
 */
final class PhotoSource {
    static final int MAX_SIDE = 2048;
    /** Memory bound: at most this many photographs (in path order) are used. */
    static final int MAX_PHOTOS = 64;

    private record Photo(int width, int height, byte[] rgb) {}

    private final List<Photo> photos;

    private PhotoSource(List<Photo> photos) {
        this.photos = photos;
    }

    /** The candidate files, in a stable order: every regular, non-hidden file below {@code dir}. */
    static List<Path> candidates(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("photo folder does not exist or is not a directory: " + dir);
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile)
                    .filter(p -> !p.getFileName().toString().startsWith("."))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
    }

    /**
     * Names, sizes and modification times of the candidates, hashed: a cached dataset made from
     * other photographs must not be mistaken for this one.
     */
    static String fingerprint(Path dir) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (Path p : candidates(dir)) {
                String line = dir.relativize(p) + "\t" + Files.size(p) + "\t"
                        + Files.getLastModifiedTime(p).toMillis() + "\n";
                md.update(line.getBytes(StandardCharsets.UTF_8));
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + dir, e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Loads the readable photographs of {@code dir} (anything javax.imageio reads: JPEG, PNG, BMP,
     * GIF); lists the unreadable ones in one warning line on stderr.
     *
     * @throws IllegalArgumentException when none is readable
     */
    static PhotoSource load(Path dir) {
        List<Path> files = candidates(dir);
        List<Path> used = files.subList(0, Math.min(files.size(), MAX_PHOTOS * 4));
        // Each file is independent; decode them on all cores, keeping path order.
        List<Photo> loaded = used.parallelStream().map(PhotoSource::read).toList();
        List<Photo> photos = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        for (int i = 0; i < used.size(); i++) {
            Photo p = loaded.get(i);
            if (p == null) {
                skipped.add(dir.relativize(used.get(i)).toString());
            } else if (photos.size() < MAX_PHOTOS) {
                photos.add(p);
            }
        }
        if (photos.isEmpty()) {
            throw new IllegalArgumentException("no readable photographs in " + dir
                    + " (javax.imageio reads JPEG, PNG, BMP and GIF; found " + files.size() + " files)");
        }
        if (!skipped.isEmpty()) {
            System.err.println("stoke: skipped " + skipped.size() + " unreadable file(s) in " + dir + ": "
                    + String.join(", ", skipped.subList(0, Math.min(10, skipped.size())))
                    + (skipped.size() > 10 ? ", ..." : ""));
        }
        return new PhotoSource(List.copyOf(photos));
    }

    int size() {
        return photos.size();
    }

    private static Photo read(Path file) {
        BufferedImage img;
        try {
            img = ImageIO.read(file.toFile());
        } catch (IOException | RuntimeException e) {
            return null; // corrupt or unsupported: reported by the caller with the other skips
        }
        if (img == null || img.getWidth() < 32 || img.getHeight() < 32) {
            return null;
        }
        int w = img.getWidth();
        int h = img.getHeight();
        byte[] rgb = new byte[3 * w * h];
        int[] row = new int[w];
        for (int y = 0; y < h; y++) {
            img.getRGB(0, y, w, 1, row, 0, w);
            for (int x = 0, o = 3 * y * w; x < w; x++, o += 3) {
                int c = row[x];
                rgb[o] = (byte) (c >> 16);
                rgb[o + 1] = (byte) (c >> 8);
                rgb[o + 2] = (byte) c;
            }
        }
        int longSide = Math.max(w, h);
        if (longSide > MAX_SIDE) {
            Planes small = new Planes();
            small.resize(Math.max(1, (int) ((long) w * MAX_SIDE / longSide)), Math.max(1, (int)
                    ((long) h * MAX_SIDE / longSide)));
            AreaResampler.resample(rgb, w, 0, 0, w, h, false, small);
            int n = small.width * small.height;
            rgb = new byte[3 * n];
            for (int i = 0; i < n; i++) {
                rgb[3 * i] = (byte) Math.round(small.r[i]);
                rgb[3 * i + 1] = (byte) Math.round(small.g[i]);
                rgb[3 * i + 2] = (byte) Math.round(small.b[i]);
            }
            w = small.width;
            h = small.height;
        }
        return new Photo(w, h, rgb);
    }

    /**
     * A crop with the aspect ratio of {@code p} from a random photograph, resampled into {@code p}.
     * Crops cover 25%-100% of the largest such crop, never (where the photograph allows it) fewer
     * source pixels than the output has: upscaled crops are blurrier than any ImageNet photo.
     */
    void paint(Planes p, Rng rng) {
        Photo photo = photos.get(rng.nextInt(photos.size()));
        double aspect = (double) p.width / p.height;
        double maxW = Math.min(photo.width(), photo.height() * aspect);
        double minW = Math.min(maxW, Math.max(p.width, 0.5 * maxW));
        double cw = minW + (maxW - minW) * rng.nextDouble();
        double ch = cw / aspect;
        double cx = (photo.width() - cw) * rng.nextDouble();
        double cy = (photo.height() - ch) * rng.nextDouble();
        AreaResampler.resample(photo.rgb(), photo.width(), cx, cy, cw, ch, rng.chance(0.5), p);
        // Exposure differs from shot to shot.
        float gain = (float) rng.range(0.9, 1.1);
        int n = p.width * p.height;
        for (int i = 0; i < n; i++) {
            p.r[i] *= gain;
            p.g[i] *= gain;
            p.b[i] *= gain;
        }
    }
}
