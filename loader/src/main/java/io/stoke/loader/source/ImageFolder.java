package io.stoke.loader.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;

/**
 * Scans torchvision's ImageFolder layout: {@code root/<class>/<file>}, and files in folders below a
 * class folder, as torchvision's {@code make_dataset} walks them ({@code os.walk(class folder,
 * followlinks=True)}). Classes are the sorted sub-folder names and a sample's label is its class's
 * position. Within a class, the folders come in the order of their paths and each folder's files
 * sorted, both by code point as Python sorts, so the index is torchvision's and identical on every
 * machine. A link to a folder is followed, except one to a folder it already lies in (a loop, which
 * torchvision would follow until the path is too long). Where torchvision differs: a folder whose
 * own name has an image extension is a sample here (names are listed without a {@code stat} each,
 * as 1.28 million are at ImageNet's scale), and reading it fails naming it a folder; torchvision
 * walks it. Files whose extension is not an image extension ({@code .jpg .jpeg .png .bmp .webp ...},
 * any case) are ignored, as torchvision does; what a file holds is told by its bytes when it is
 * decoded (a PNG named .jpg is a PNG). A folder that cannot be listed is an error naming it.
 */
public final class ImageFolder {
    private static final String[] EXTENSIONS = {
        ".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"
    };
    /** Python's order of str: by code point (String.compareTo orders UTF-16 units, which differs past U+FFFF). */
    static final Comparator<String> CODE_POINTS = (x, y) -> {
        int i = 0;
        int j = 0;
        while (i < x.length() && j < y.length()) {
            int a = x.codePointAt(i);
            int b = y.codePointAt(j);
            if (a != b) {
                return Integer.compare(a, b);
            }
            i += Character.charCount(a);
            j += Character.charCount(b);
        }
        return Boolean.compare(i < x.length(), j < y.length());
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
        classes.sort(CODE_POINTS);
        if (classes.isEmpty()) {
            throw new IllegalArgumentException(
                    "no class folders in " + root + " (ImageFolder layout is root/<class>/<image>)");
        }
        FileDataset.Builder builder = new FileDataset.Builder();
        for (int label = 0; label < classes.size(); label++) {
            String cls = classes.get(label);
            // One class's names at a time: the only per-file objects, and they die here.
            for (String name : classFiles(root.resolve(cls), cls)) {
                builder.add(name.getBytes(StandardCharsets.UTF_8), label);
            }
        }
        FileDataset dataset = builder.build(root.toAbsolutePath(), classes);
        if (dataset.size() == 0) {
            throw new IllegalArgumentException("no image files under " + root + datasetsBelow(root, classes));
        }
        return dataset;
    }

    /**
     * Where a tree without images holds another dataset one level down (the class folders are then
     * a Parquet table's folder, as Spark writes {@code train.parquet/part-*.parquet}, its partitions
     * {@code label=3/}, or folders of shards), what to name instead; else "". Asked only on failure.
     */
    private static String datasetsBelow(Path root, List<String> classes) {
        List<String> parquet = new ArrayList<>();
        List<String> shards = new ArrayList<>();
        for (String cls : classes) {
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(root.resolve(cls))) {
                for (Path entry : entries) {
                    String name = entry.getFileName().toString().toLowerCase(Locale.ROOT);
                    if (name.endsWith(".parquet") && !parquet.contains(cls)) {
                        parquet.add(cls);
                    } else if (name.endsWith(".tar") && !shards.contains(cls)) {
                        shards.add(cls);
                    }
                }
            } catch (IOException e) {
                // unlistable: nothing to say of it
            }
        }
        if (!parquet.isEmpty()) {
            String first = parquet.get(0);
            return parquet.stream().allMatch(c -> c.indexOf('=') > 0)
                    ? "; its folders " + folders(parquet) + " hold .parquet files: a table partitioned by "
                            + first.substring(0, first.indexOf('=')) + ", which is not read as one dataset (a"
                            + " partition's value is not read as a column); write it unpartitioned, or name one"
                            + " partition's folder, " + root.resolve(first)
                    : "; its folders " + folders(parquet) + " hold .parquet files: name one of them, "
                            + root.resolve(first);
        }
        if (!shards.isEmpty()) {
            return "; its folders " + folders(shards) + " hold .tar shards: name one of them, "
                    + root.resolve(shards.get(0));
        }
        return "";
    }

    /** Up to three folder names, as {@code a/, b/ and 2 more}. */
    private static String folders(List<String> names) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(3, names.size()); i++) {
            b.append(i == 0 ? "" : ", ").append(names.get(i)).append('/');
        }
        return names.size() > 3
                ? b.append(" and ").append(names.size() - 3).append(" more").toString()
                : b.toString();
    }

    /**
     * A class folder's image files, as paths from the dataset's root ({@code cls/...}), in
     * torchvision's order: {@code sorted(os.walk(folder, followlinks=True))}, each folder's files
     * {@code sorted}.
     */
    private static List<String> classFiles(Path folder, String cls) {
        // Each folder's path from the class folder ("" for itself, "/sub", "/sub/deeper"), sorted as
        // os.walk's tuples are: by the folder's whole path, of which these are the differing ends.
        TreeMap<String, List<String>> byFolder = new TreeMap<>(CODE_POINTS);
        walk(folder, "", List.of(fileKey(folder)), byFolder);
        List<String> names = new ArrayList<>();
        for (var e : byFolder.entrySet()) {
            for (String f : e.getValue()) {
                names.add(cls + e.getKey() + "/" + f);
            }
        }
        return names;
    }

    /**
     * Lists {@code dir} into {@code byFolder} under {@code path}, then the folders in it. A name with
     * an image extension is taken for a file without a {@code stat} (ImageNet's 1.28 million files
     * cost none): a folder so named is then a sample whose read says it is a folder. Any other
     * name is {@code stat}ed, following links, and walked when it is a folder and not one of
     * {@code above}, the folders it lies in (a loop).
     */
    private static void walk(Path dir, String path, List<Object> above, TreeMap<String, List<String>> byFolder) {
        List<String> files = new ArrayList<>();
        List<String> folders = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                if (hasImageExtension(name)) {
                    files.add(name);
                } else if (Files.isDirectory(entry)) {
                    folders.add(name);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
        files.sort(CODE_POINTS);
        byFolder.put(path, files);
        for (String name : folders) {
            Path sub = dir.resolve(name);
            Object key = fileKey(sub);
            if (key != null && above.contains(key)) {
                continue; // a link to a folder it lies in: walked once, as itself
            }
            List<Object> below = new ArrayList<>(above);
            below.add(key);
            walk(sub, path + "/" + name, below, byFolder);
        }
    }

    /** What names a folder whatever the path to it (its device and inode), or null where there is none. */
    private static Object fileKey(Path dir) {
        try {
            return Files.readAttributes(dir, BasicFileAttributes.class).fileKey();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
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
