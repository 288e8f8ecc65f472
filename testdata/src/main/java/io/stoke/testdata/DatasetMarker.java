package io.stoke.testdata;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The file that makes a folder a cache of {@link SyntheticImageNet#ensure}: what was generated
 * (generator version, options, photographs' fingerprint), whether it finished, and every file
 * with its size and properties, so that a cache hit needs no JPEG parsing to report statistics.
 * Hidden and at the root, where ImageFolder does not look.
 */
record DatasetMarker(String key, boolean complete, double seconds, List<ImageRecord> records) {
    static final String FILE_NAME = ".stoke-synthetic-imagenet";
    static final String LOCK_NAME = ".stoke-synthetic-imagenet.lock";
    private static final String MAGIC = "stoke synthetic imagenet";

    static DatasetMarker expected(SyntheticImageNet.Options o, String photoFingerprint) {
        String key = "version=" + SyntheticImageNet.GENERATOR_VERSION
                + " images=" + o.images() + " classes=" + o.classes() + " seed=" + o.seed()
                + " photos=" + (o.photoDir() == null ? "-" : o.photoDir() + "@" + photoFingerprint);
        return new DatasetMarker(key, false, 0, List.of());
    }

    boolean sameDataset(DatasetMarker other) {
        return key.equals(other.key);
    }

    /** Every recorded file exists with its recorded size, and no other image file is there. */
    boolean filesPresent(Path dir) {
        try {
            for (ImageRecord r : records) {
                if (Files.size(dir.resolve(r.path())) != r.bytes()) {
                    return false;
                }
            }
            try (Stream<Path> s = Files.walk(dir)) {
                long files = s.filter(Files::isRegularFile)
                        .filter(p -> !p.getFileName().toString().startsWith("."))
                        .count();
                return files == records.size();
            }
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot check " + dir, e);
        }
    }

    /** The marker in {@code dir}, or null if there is none or it is not ours. */
    static DatasetMarker read(Path dir) {
        Path file = dir.resolve(FILE_NAME);
        if (!Files.isRegularFile(file)) {
            return null;
        }
        try {
            List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            if (lines.size() < 4 || !lines.get(0).equals(MAGIC)) {
                return null;
            }
            boolean complete = lines.get(2).equals("complete");
            double seconds = Double.parseDouble(lines.get(3));
            List<ImageRecord> records = new ArrayList<>();
            for (String line : lines.subList(4, lines.size())) {
                String[] f = line.split("\t");
                records.add(new ImageRecord(
                        f[0],
                        Long.parseLong(f[1]),
                        Integer.parseInt(f[2]),
                        Integer.parseInt(f[3]),
                        Integer.parseInt(f[4]),
                        f[5].equals("1"),
                        f[6].equals("1")));
            }
            return new DatasetMarker(lines.get(1), complete, seconds, List.copyOf(records));
        } catch (IOException | RuntimeException e) {
            // Unparseable but ours by name: treat as an unfinished cache, which gets rebuilt.
            return new DatasetMarker("", false, 0, List.of());
        }
    }

    void writeIncomplete(Path dir) {
        write(dir, false, 0, List.of());
    }

    void writeComplete(Path dir, double seconds, List<ImageRecord> written) {
        write(dir, true, seconds, written);
    }

    private void write(Path dir, boolean done, double secs, List<ImageRecord> written) {
        StringBuilder sb = new StringBuilder();
        sb.append(MAGIC)
                .append('\n')
                .append(key)
                .append('\n')
                .append(done ? "complete" : "incomplete")
                .append('\n')
                .append(String.format(Locale.ROOT, "%.3f", secs))
                .append('\n');
        for (ImageRecord r : written) {
            sb.append(r.path())
                    .append('\t')
                    .append(r.bytes())
                    .append('\t')
                    .append(r.width())
                    .append('\t')
                    .append(r.height())
                    .append('\t')
                    .append(r.quality())
                    .append('\t')
                    .append(r.progressive() ? 1 : 0)
                    .append('\t')
                    .append(r.grayscale() ? 1 : 0)
                    .append('\n');
        }
        try {
            Files.createDirectories(dir);
            Path tmp = dir.resolve(FILE_NAME + ".tmp");
            Files.writeString(tmp, sb, StandardCharsets.UTF_8);
            Files.move(
                    tmp, dir.resolve(FILE_NAME), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + dir.resolve(FILE_NAME), e);
        }
    }

    /**
     * Throws unless {@code dir} is absent, empty, or has our marker: a mistyped cache path must
     * not cost anyone their files.
     */
    static void refuseForeign(Path dir) {
        if (!Files.isDirectory(dir) || Files.exists(dir.resolve(FILE_NAME))) {
            return;
        }
        try (Stream<Path> s = Files.list(dir)) {
            if (s.anyMatch(p -> !p.getFileName().toString().equals(LOCK_NAME))) {
                throw new IllegalStateException("refusing to replace " + dir
                        + ": it is not empty and was not made by stoke's dataset generator (no "
                        + FILE_NAME + " file); choose another folder or empty it");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
    }

    /** The lock file, inside the folder so that it needs no other write permission. */
    static FileChannel openLock(Path dir) throws IOException {
        Files.createDirectories(dir);
        return FileChannel.open(dir.resolve(LOCK_NAME), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    }

    /** Empties {@code dir} except for the lock file; call only after {@link #refuseForeign}. */
    static void wipe(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                if (!p.equals(dir) && !p.equals(dir.resolve(LOCK_NAME))) {
                    Files.delete(p);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot empty " + dir, e);
        }
    }
}
