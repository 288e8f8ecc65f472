package io.stoke.loader.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Scans torchvision's ImageFolder layout: {@code root/<class>/<file>}. Classes are the sorted
 * sub-folder names and a sample's label is its class's position; files within a class are sorted
 * too, so the index is identical on every machine. Files whose extension is not an image
 * extension ({@code .jpg .jpeg .png .bmp .webp ...}, any case) are ignored, as torchvision does;
 * what a file holds is told by its bytes when it is decoded (a PNG named .jpg is a PNG).
 */
public final class ImageFolder {
    private static final String[] EXTENSIONS = {
        ".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"
    };

    private ImageFolder() {}

    public static FileDataset scan(Path root) {
        if (!Files.isDirectory(root)) {
            throw new IllegalArgumentException("not a directory: " + root);
        }
        List<String> classes = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, Files::isDirectory)) {
            for (Path dir : dirs) {
                classes.add(dir.getFileName().toString());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + root, e);
        }
        classes.sort(null);
        if (classes.isEmpty()) {
            throw new IllegalArgumentException(
                    "no class folders in " + root + " (ImageFolder layout is root/<class>/<image>)");
        }
        FileDataset.Builder builder = new FileDataset.Builder();
        for (int label = 0; label < classes.size(); label++) {
            String cls = classes.get(label);
            // Names of one class at a time: the only per-file objects, and they die here.
            List<String> names = new ArrayList<>();
            try (DirectoryStream<Path> files = Files.newDirectoryStream(root.resolve(cls))) {
                for (Path f : files) {
                    String name = f.getFileName().toString();
                    if (hasImageExtension(name)) {
                        names.add(name);
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list " + root.resolve(cls), e);
            }
            String[] sorted = names.toArray(String[]::new);
            Arrays.sort(sorted);
            for (String name : sorted) {
                builder.add((cls + "/" + name).getBytes(StandardCharsets.UTF_8), label);
            }
        }
        FileDataset dataset = builder.build(root.toAbsolutePath(), classes);
        if (dataset.size() == 0) {
            throw new IllegalArgumentException("no image files under " + root);
        }
        return dataset;
    }

    static boolean hasImageExtension(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        for (String ext : EXTENSIONS) {
            if (lower.endsWith(ext)) {
                return true;
            }
        }
        return false;
    }
}
